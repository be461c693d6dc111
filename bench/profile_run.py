"""Where a headless run spends its own time: `obai-e2e run` on N instant cases under a profiler.

  uv run python bench/profile_run.py [--n 1000] [--jobs 1] [--tool py-spy|cprofile] [--idle] [--top 40]

The cases and the stand-in agent are those of bench_peers.py (a fresh trace store and runs
folder in a temporary directory). With py-spy (every thread, sampled; `--idle` counts time
spent waiting too, which shows where the wall clock goes; `--gil` only the thread holding
the GIL, which is the Python CPU the harness spends) the harness process is sampled
from outside, the agents and the store are not; py-spy is looked for on PATH, then in
~/.cache/obai-bench/pyspy. With cProfile only the main thread is seen (-j drives units on
worker threads), so it suits the start and the finish of a run.

Prints the functions ranked by own samples and by inclusive samples (a function counted
once per sample whatever its depth), the phase timings from the run's own stderr, and one
JSON line at the end. --keep DIR keeps the raw profile there.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import CACHE, Store, write_inputs  # noqa: E402


def pyspy() -> str | None:
    return shutil.which("py-spy") or next((str(p) for p in [CACHE / "pyspy" / "bin" / "py-spy"] if p.exists()), None)


def frame_name(frame: str) -> str:
    # py-spy raw frames: "function (path/to/file.py:line)"; keep function and short file.
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0]
    parts = Path(path).parts
    short = "/".join(parts[parts.index("obai_e2e"):]) if "obai_e2e" in parts else "/".join(parts[-2:])
    return f"{name} ({short})"


def rank_collapsed(text: str, top: int) -> dict:
    own: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [frame_name(f) for f in stack.split(";") if f and not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += n
        own[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    return {"samples": total,
            "own": [(f, c, round(100 * c / total, 1)) for f, c in own.most_common(top)],
            "inclusive": [(f, c, round(100 * c / total, 1)) for f, c in incl.most_common(top)]}


def rank_cprofile(path: Path, top: int) -> dict:
    import pstats

    st = pstats.Stats(str(path))
    rows = []
    for (file, line, func), (cc, nc, tt, ct, callers) in st.stats.items():
        parts = Path(file).parts
        short = "/".join(parts[parts.index("obai_e2e"):]) if "obai_e2e" in parts else "/".join(parts[-2:])
        rows.append((f"{func} ({short}:{line})", nc, tt, ct))
    own = sorted(rows, key=lambda r: -r[2])[:top]
    incl = sorted(rows, key=lambda r: -r[3])[:top]
    return {"own": [(f, n, round(tt, 3)) for f, n, tt, _ in own],
            "inclusive": [(f, n, round(ct, 3)) for f, n, _, ct in incl]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--tool", choices=["py-spy", "cprofile"], default="py-spy")
    p.add_argument("--idle", action="store_true", help="py-spy: count waiting threads too (wall time)")
    p.add_argument("--gil", action="store_true", help="py-spy: only the thread holding the GIL (Python CPU)")
    p.add_argument("--rate", type=int, default=97, help="py-spy samples per second")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--keep", type=Path, default=None, help="copy the raw profile into this folder")
    args = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="obai-profile-") as tmp:
        tmp = Path(tmp)
        d = write_inputs(tmp, args.n)["dir"]
        with Store(tmp / "store") as store:
            env = {**os.environ, **store.sdk_env, "OBAI_TRACE_STORE_DIR": str(store.dir),
                   "OBAI_E2E_RUNS": str(tmp / "runs")}
            run = [sys.executable, "-m", "obai_e2e", "run", "--target", str(d / "target.yaml"),
                   "--cases", str(d / "cases.yaml"), "--jobs", str(args.jobs)]
            if args.tool == "py-spy":
                exe = pyspy()
                if exe is None:
                    raise SystemExit("py-spy not found (pip install py-spy, or use --tool cprofile)")
                raw = tmp / "profile.txt"
                argv = [exe, "record", "--format", "raw", "--rate", str(args.rate), "--threads", "--output",
                        str(raw), *(["--idle"] if args.idle else []), *(["--gil"] if args.gil else []), "--", *run]
            else:
                raw = tmp / "profile.pstats"
                argv = [sys.executable, "-m", "cProfile", "-o", str(raw), *run[1:]]
            t0 = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=d, capture_output=True, text=True)
            wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"the profiled run exited {done.returncode}:\n{done.stderr[-3000:]}")
        # py-spy adds its own lines to stdout after the run's JSON.
        out = done.stdout[done.stdout.index("{"):] if "{" in done.stdout else "{}"
        summary = json.JSONDecoder().raw_decode(out)[0].get("summary")
        ranked = rank_collapsed(raw.read_text(), args.top) if args.tool == "py-spy" else rank_cprofile(raw, args.top)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            mode = ("-idle" if args.idle else "") + ("-gil" if args.gil else "")
            shutil.copy(raw, args.keep / f"{args.tool}-n{args.n}-j{args.jobs}{mode}{raw.suffix}")
        store_cpu = store.used_cpu

    unit = "samples" if args.tool == "py-spy" else "s"
    print(f"# obai-e2e run, {args.n} instant cases, -j{args.jobs}, {args.tool}{' --idle' if args.idle else ''}"
          f"{' --gil' if args.gil else ''}: "
          f"{wall:.1f} s wall (profiler included), store {store_cpu:.1f} s CPU, summary {summary}")
    for kind in ("own", "inclusive"):
        print(f"\n## by {kind} {unit}")
        for name, *figs in ranked[kind]:
            print(f"{figs[0]:>8}  {figs[-1]:>7}  {name}")
    print(json.dumps({"bench": "profile_run", "n": args.n, "jobs": args.jobs, "tool": args.tool, "idle": args.idle,
                      "wall_s": round(wall, 2), "summary": summary, **ranked}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
