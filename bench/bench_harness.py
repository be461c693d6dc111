"""How much the harness adds to the agent's own time, and how that grows with the case count.

  uv run python bench/bench_harness.py demo [--units 100]      real demo turns: overhead and resolution latency
  uv run python bench/bench_harness.py scripts [--units 10]    the SKILL.md scripts, one process each
  uv run python bench/bench_harness.py scale [--sizes 100,1000] a fast stand-in agent, headless run

Everything runs in a temporary runs folder with its own trace store. Prints figures as text
and one JSON line at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))


def pct(values, p):
    values = sorted(values)
    if not values:
        return None
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def isolate(tmp: Path) -> None:
    os.environ["OBAI_E2E_RUNS"] = str(tmp / "runs")
    os.environ["OBAI_TRACE_STORE_DIR"] = str(tmp / "store")
    os.environ.pop("OBAI_DEMO_FAULTS", None)


def demo(units: int) -> dict:
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.selection import Filters
    from obai_e2e.config.target import load_target_config
    from obai_e2e.run import headless

    config = load_target_config()
    cases = load_cases_for(config)
    packets = []
    while len(packets) < units:
        code, out = headless.run(config, cases, headless.RunOptions(filters=Filters(), jobs=2))
        run_dir = Path(out["run_dir"])
        packets += [json.loads(p.read_text()) for p in sorted(run_dir.glob("*.json"))
                    if p.name.count(".") <= 2 and not p.name.endswith(".verdict.json")
                    and p.name not in ("run.json", "results.json", "suite.json", "comparison.json", "seal.json")]
    packets = packets[:units]
    overhead = [p["harness"]["overhead_ms"] for p in packets]
    resolve = [p["trace"]["resolve_ms"] for p in packets if p["trace"].get("resolve_ms") is not None
               and p["trace"]["status"] == "resolved"]
    fetch = [p["trace"].get("fetch_ms") for p in packets if p["trace"].get("fetch_ms") is not None]
    target = [p["harness"]["target_ms"] for p in packets]
    return {"units": len(packets),
            "overhead_ms": {"median": statistics.median(overhead), "p95": pct(overhead, 0.95)},
            "resolution_ms": {"median": statistics.median(resolve), "p95": pct(resolve, 0.95)},
            "fetch_ms": {"median": statistics.median(fetch), "p95": pct(fetch, 0.95)},
            "target_ms": {"median": statistics.median(target), "p95": pct(target, 0.95)}}


def scripts(units: int) -> dict:
    """The per-case scripts of the SKILL.md flow as separate processes (interpreter start included)."""
    env = dict(os.environ)
    new = json.loads(subprocess.run([sys.executable, str(REPO / "scripts" / "new_run.py")], env=env,
                                    capture_output=True, text=True, check=True).stdout)
    run_dir = new["run_dir"]
    ids = [u for u in new["pending"] if not u.startswith(("A", "S1", "M1"))][:units]
    rows = []
    for uid in ids:
        timings = {}
        for name, args in (("run_one", ["--id", uid, "--run-dir", run_dir]),
                           ("check_case", ["--id", uid, "--run-dir", run_dir]),
                           ("record_verdict", ["--id", uid, "--run-dir", run_dir, "--mechanical"])):
            t0 = time.monotonic()
            done = subprocess.run([sys.executable, str(REPO / "scripts" / f"{name}.py"), *args], env=env,
                                  capture_output=True, text=True)
            timings[name] = (time.monotonic() - t0) * 1000
            assert done.returncode == 0, done.stderr[-1000:]
        packet = json.loads((Path(run_dir) / f"{uid}.json").read_text())
        own = timings["run_one"] - packet["harness"]["target_ms"] - packet["harness"]["waited_ms"]
        rows.append({"run_one_own_ms": max(0.0, own), "check_case_ms": timings["check_case"],
                     "record_ms": timings["record_verdict"]})
    total = [r["run_one_own_ms"] + r["check_case_ms"] + r["record_ms"] for r in rows]
    return {"units": len(rows),
            "run_one_own_ms": statistics.median(r["run_one_own_ms"] for r in rows),
            "check_case_ms": statistics.median(r["check_case_ms"] for r in rows),
            "record_ms": statistics.median(r["record_ms"] for r in rows),
            "scripts_own_per_case_ms": {"median": statistics.median(total), "p95": pct(total, 0.95)}}


def scale(sizes: list[int], tmp: Path) -> dict:
    from obai_e2e.config.cases import load_cases
    from obai_e2e.config.selection import Filters
    from obai_e2e.config.target import load_target_config
    from obai_e2e.run import headless

    target = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
    target["target"]["command"] = [sys.executable, str(REPO / "bench" / "standin_agent.py"), "--session",
                                   "{session}", "{query}"]
    target["target"]["version_command"] = [sys.executable, str(REPO / "bench" / "standin_agent.py"), "--version"]
    (tmp / "target.yaml").write_text(yaml.safe_dump(target))
    config = load_target_config(tmp / "target.yaml")
    out = {}
    for n in sizes:
        cases = {"version": 1, "cases": [
            {"id": f"B{i:05d}", "feature": "market_data", "query": f"What is the latest price of AAPL? (case {i})",
             "expected_skills": ["market-data"], "expected_tools": ["market_data_analysis"],
             "labels": {"intent": "price_lookup"}} for i in range(n)]}
        path = tmp / f"cases-{n}.yaml"
        path.write_text(yaml.safe_dump(cases))
        case_set = load_cases(path, specialists=config.vocabulary.specialists)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic()
        code, res = headless.run(config, case_set, headless.RunOptions(filters=Filters(), jobs=4))
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        run_dir = Path(res["run_dir"])
        target_ms = [json.loads((run_dir / f"B{i:05d}.json").read_text())["harness"]["target_ms"] for i in range(n)]
        out[n] = {"exit": code, "wall_s": round(wall, 2), "harness_cpu_s": round(cpu, 2),
                  "harness_cpu_ms_per_case": round(cpu * 1000 / n, 1), "wall_ms_per_case": round(wall * 1000 / n, 1),
                  "target_ms_median": statistics.median(target_ms),
                  "report_md_bytes": (run_dir / "report.md").stat().st_size}
        assert res["summary"]["pass"] == n, res["summary"]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["demo", "scripts", "scale"])
    p.add_argument("--units", type=int, default=None)
    p.add_argument("--sizes", default="100,1000")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        isolate(Path(tmp))
        try:
            if args.what == "demo":
                figures = demo(args.units or 100)
            elif args.what == "scripts":
                figures = scripts(args.units or 10)
            else:
                figures = scale([int(s) for s in args.sizes.split(",")], Path(tmp))
        finally:
            subprocess.run([sys.executable, "-m", "obai_e2e", "traces", "stop"], capture_output=True)
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(json.dumps({"bench": args.what, **{str(k): v for k, v in figures.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
