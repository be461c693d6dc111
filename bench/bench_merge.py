"""What merge-runs pays to take a shard as sealed evidence, by the shard's size.

  uv run python bench/bench_merge.py [--units 1000,10000]

A sealed shard of N units is made from a stored real packet and verdict
(tests/judging/data/demo-run, MD1) under N unit ids; then, in this process, the shard is
read as merge-runs reads it (load_parts: no link anywhere, the seal verified; check_parts:
every packet and verdict read against the seal and checked), and, for scale, every file is
read once the way the merge copies it. Figures: wall and CPU seconds, and the peak RSS.
Prints figures as text and one JSON line at the end.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from obai_e2e.protocol.seal import seal  # noqa: E402
from obai_e2e.run.merge import check_parts, load_parts  # noqa: E402

DATA = ROOT / "tests" / "judging" / "data" / "demo-run"


def make_shard(where: Path, units: int) -> Path:
    run = json.loads((DATA / "run.json").read_text())
    packet = json.loads((DATA / "MD1.json").read_text())
    verdict = json.loads((DATA / "MD1.verdict.json").read_text())
    ids = [f"U{i}" for i in range(units)]
    run.update(units=ids, shard={"index": 1, "total": 1, "plan_units": ids, "timings": None, "plan_sha256": "x"})
    shard = where / "2026-01-01" / "000000"
    shard.mkdir(parents=True)
    (shard / "run.json").write_text(json.dumps(run))
    for uid in ids:
        (shard / f"{uid}.json").write_text(json.dumps({**packet, "unit_id": uid, "run_id": run["run_id"]}))
        (shard / f"{uid}.verdict.json").write_text(json.dumps({**verdict, "unit_id": uid}))
    seal(shard)
    return shard


def timed(fn) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", default="1000,10000")
    sizes = [int(x) for x in ap.parse_args().units.split(",")]
    out = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            shard = make_shard(Path(tmp), n)
            size = sum(p.stat().st_size for p in shard.iterdir())
            verify_wall, verify_cpu = timed(lambda: check_parts(load_parts([shard])))
            read_wall, read_cpu = timed(lambda: [p.read_bytes() for p in shard.iterdir()])
        row = {"units": n, "mb": round(size / 1e6, 1), "verify_wall_s": round(verify_wall, 2),
               "verify_cpu_s": round(verify_cpu, 2), "read_once_wall_s": round(read_wall, 2),
               "read_once_cpu_s": round(read_cpu, 2)}
        out.append(row)
        print(f"{n:>6} units, {row['mb']} MB: verify {verify_wall:.2f} s wall / {verify_cpu:.2f} s CPU; "
              f"reading every file once {read_wall:.2f} s / {read_cpu:.2f} s")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")
    print(json.dumps({"bench": "merge", "sizes": out, "peak_rss_mb": round(peak_mb)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
