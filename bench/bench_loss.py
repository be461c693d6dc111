"""Benchmark of the loss layer: read, score and compare two runs of N units each, streamed from disk.

For each size, a fresh process writes two runs to a temporary folder with the harness's
writer (``report.rows.write_rows``: results.units.jsonl one unit at a time, then the
results.json head; every unit with the 21 rule outcomes of a real demo unit, labels,
verdict, answers, a quarter with a 3-judge panel) over the bundled 8-category catalog and
a plan of 20 partitions; the new run carries an injected routing regression in one
partition (write: time and peak RSS of that process). Another fresh process then
measures, for the new run (mode A) and the baseline (re-scored in mode B):

* read: the head checked, the rows streamed (parsed, a sample schema-checked, the SHA-256
  verified) and each row turned into its per-category losses: the loss table;
* score: the statistics per partition × category from the two tables, suite.json
  built, schema-checked and serialised;
* compare: the decision rule, TOP-REGRESSIONS.md with its citations (read back from the
  rows file by offset) and comparison.json;

and its peak RSS (ru_maxrss of that process). Prints the figures as text and, last, one
JSON line per size.

    uv run python bench/bench_loss.py [--units 10000 100000] [--partitions 20]
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import yaml  # noqa: E402
from obai_e2e.base.fsutil import dumps_json  # noqa: E402
from obai_e2e.base.paths import catalogs_dir  # noqa: E402
from obai_e2e.loss.catalog import load_catalog  # noqa: E402
from obai_e2e.loss.compare import compare  # noqa: E402
from obai_e2e.loss.plan import parse_plan  # noqa: E402
from obai_e2e.loss.reports import top_regressions_md  # noqa: E402
from obai_e2e.loss.score import check_suite, score_table  # noqa: E402
from obai_e2e.loss.table import read_table  # noqa: E402
from obai_e2e.loss.units import UnitScorer  # noqa: E402
from obai_e2e.report.rows import STREAMED_VERSION, open_results, write_rows  # noqa: E402

TEMPLATES = json.loads((ROOT / "tests" / "loss" / "data" / "templates.json").read_text(encoding="utf-8"))
INTENTS = ["price_lookup", "fundamentals", "backtest", "multi", "options_risk", "prediction", "refusal", "general",
           "news", "portfolio"]
CUSTOMERS = ["retail", "pro"]
TRIPS = [  # (code, status, probability in the baseline)
    ("routing.skill_missing", "fail", 0.02), ("routing.unexpected_specialist", "needs_review", 0.05),
    ("routing.hub_paraphrase", "fail", 0.01), ("trace.error_span:market_data_analysis", "fail", 0.01),
    ("specialist.market_data_analysis.empty", "fail", 0.02), ("guardrail.leaky", "fail", 0.005),
    ("hub.unverified_number:{n}", "needs_review", 0.08),
]


def plan_for(partitions: int):
    parts = []
    for i in range(partitions):
        parts.append({"labels": {"intent": INTENTS[i // 2 % len(INTENTS)], "customer_type": CUSTOMERS[i % 2]},
                      "frequency": round(1 / partitions, 4), "damage": 1 + i % 3})
    data = {"version": 1, "mde": 0.05, "hops": [{"id": "h", "from": "a", "to": "b", "signal": "s", "correct": "c",
                                                 "flake": "f", "real_error": "e"}], "partitions": parts}
    text = yaml.safe_dump(data, sort_keys=False)
    return parse_plan(yaml.safe_load(text), {}, text, "bench-plan.yaml", Path("bench-plan.yaml"))


def units(n_units: int, partitions: int, seed: int, regression: bool, summary: dict):
    """Yield ``n_units`` results units; counts verdicts into ``summary``."""
    rng = random.Random(seed)
    template = TEMPLATES["units"][0]
    passing = template["rule_outcomes"]
    made = i = 0
    while made < n_units:
        p = i % partitions
        labels = {"intent": INTENTS[p // 2 % len(INTENTS)], "customer_type": CUSTOMERS[p % 2], "channel": "cli",
                  "language": "en"}
        repeats = 3 if i % 10 == 0 else 1
        for k in range(1, repeats + 1):
            if made >= n_units:
                break
            u = copy.copy(template)
            u.update(unit_id=f"C{i}.r{k}" if repeats > 1 else f"C{i}", case_id=f"C{i}", repeat=k, labels=labels,
                     curated_trace="(curated trace)", answer="(answer)")
            outcomes = list(passing)
            for code, status, prob in TRIPS:
                if regression and p == 0 and code == "routing.skill_missing":
                    prob = 0.30
                if rng.random() < prob:
                    outcomes.append({"rule": code.split(":")[0], "layer": 1, "status": status,
                                     "code": code.format(n=rng.randint(1, 999)), "detail": "tripped",
                                     "evidence": [{"excerpt": "SKILL LOADS: (none)", "span_id": f"s-{i}-{k}",
                                                   "source": "trace"}]})
            u["rule_outcomes"] = outcomes
            fails = [o for o in outcomes if o["status"] == "fail"]
            u["verdict"] = ("inconclusive" if rng.random() < 0.01 else
                            "fail" if fails else "needs_review" if len(outcomes) > len(passing) else "pass")
            u["answers"] = {"hub.incomplete_answer": "no" if rng.random() < 0.1 else "yes"}
            if rng.random() < 0.25:
                u["judge_panel"] = {"ratings": {"hub.incomplete_answer": [rng.choice([0, 1, None]) for _ in range(3)]}}
            summary[u["verdict"]] += 1
            made += 1
            yield u
        i += 1


def write_run(run_dir: Path, n_units: int, partitions: int, seed: int, regression: bool) -> None:
    run_dir.mkdir(parents=True)
    summary = {"pass": 0, "fail": 0, "needs_review": 0, "inconclusive": 0, "not_judged": 0}
    spec = write_rows(run_dir / "results.units.jsonl", units(n_units, partitions, seed, regression, summary))
    summary["total"] = n_units
    run = dict(TEMPLATES["run"], run_id=f"bench/{seed}", created_at="2026-12-01T12:00:00Z")
    head = {"schema_version": STREAMED_VERSION, "kind": "obai-e2e-results", "run": run, "summary": summary,
            "disabled": [], "units_file": spec}
    (run_dir / "results.json").write_text(json.dumps(head, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def measure(folder: Path, partitions: int, catalog_name: str = "loss-catalog.v1.json") -> dict:
    """Read, score and compare the two runs in ``folder``; runs in its own process for a clean peak RSS."""
    catalog = load_catalog(catalogs_dir() / catalog_name)
    plan = plan_for(partitions)
    gc.collect()
    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    w0, c0 = clocks()
    new_rows = open_results(folder / "new" / "results.json")
    base_rows = open_results(folder / "base" / "results.json")
    new_table = read_table(new_rows, UnitScorer(catalog, "A"), plan)
    base_table = read_table(base_rows, UnitScorer(catalog, "B"), plan)
    w1, c1 = clocks()
    new = score_table(new_table, new_rows, catalog, plan, "A")
    base = score_table(base_table, base_rows, catalog, plan, "B")
    check_suite(new.suite, "suite.json")
    suite_bytes = dumps_json(new.suite)
    w2, c2 = clocks()
    comp = compare(new, base)
    top, rows = top_regressions_md(comp, new)
    comparison = dumps_json(comp.to_json(catalog.version))
    w3, c3 = clocks()
    return {
        "read_s": round(w1 - w0, 3), "read_cpu_s": round(c1 - c0, 3),
        "score_s": round(w2 - w1, 3), "score_cpu_s": round(c2 - c1, 3),
        "compare_s": round(w3 - w2, 3), "compare_cpu_s": round(c3 - c2, 3),
        "score_plus_compare_cpu_s": round(c3 - c1, 3), "end_to_end_cpu_s": round(c3 - c0, 3),
        "end_to_end_s": round(w3 - w0, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "rss_after_imports_mb": round(rss_start),
        "compared_cells": comp.k, "findings": len(comp.findings),
        "top": [f"{c.partition} × {c.category} ci_low {c.ci_low:.4f}" for c in comp.findings[:3]],
        "suite_json_bytes": len(suite_bytes), "comparison_json_bytes": len(comparison),
        "top_regressions_rows": len(rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, nargs="+", default=[10_000, 100_000], help="units per run, one size each")
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--catalog", default="loss-catalog.v1.json", help="a catalog of catalogs/ (default v1)")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the measuring child process
    ap.add_argument("--write", type=Path, help=argparse.SUPPRESS)    # the writing child process
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.partitions, args.catalog)))
        return
    if args.write:
        w0, c0 = clocks()
        write_run(args.write / "new", args.units[0], args.partitions, 1, True)
        write_run(args.write / "base", args.units[0], args.partitions, 2, False)
        w1, c1 = clocks()
        print(json.dumps({"write_s": round(w1 - w0, 3), "write_cpu_s": round(c1 - c0, 3),
                          "write_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
        return

    calibration_ms = min(timeit.repeat("sum(range(10**6))", number=1, repeat=5)) * 1000
    for n in args.units:
        with tempfile.TemporaryDirectory(prefix="bench-loss-") as tmp:
            folder = Path(tmp)
            writer = subprocess.run([sys.executable, __file__, "--write", str(folder), "--units", str(n),
                                     "--partitions", str(args.partitions)], capture_output=True, text=True, check=True)
            written = json.loads(writer.stdout.strip().splitlines()[-1])
            size_mb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
            child = subprocess.run([sys.executable, __file__, "--measure", str(folder), "--partitions",
                                    str(args.partitions), "--catalog", args.catalog], capture_output=True, text=True,
                                   check=True)
            figures = json.loads(child.stdout.strip().splitlines()[-1])
        figures.update(written, units_per_run=n, partitions=args.partitions, categories=8,
                       files_mb=round(size_mb), calibration_sum_range_1e6_ms=round(calibration_ms, 1),
                       load_average_1m=round(os.getloadavg()[0], 2), cpus=os.cpu_count())
        print(f"loss layer: {n:,} units × 8 categories × {args.partitions} partitions, new run and baseline "
              f"({figures['files_mb']} MB on disk)")
        print(f"  write (both runs, rows then head)      {figures['write_s']:7.3f} s   CPU {figures['write_cpu_s']:.3f} s   "
              f"peak RSS {figures['write_peak_rss_mb']} MB")
        print(f"  read (stream, check, per-row losses)   {figures['read_s']:7.3f} s   CPU {figures['read_cpu_s']:.3f} s")
        print(f"  score (both runs, suite.json)          {figures['score_s']:7.3f} s   CPU {figures['score_cpu_s']:.3f} s")
        print(f"  compare (+ TOP-REGRESSIONS.md)         {figures['compare_s']:7.3f} s   CPU {figures['compare_cpu_s']:.3f} s")
        print(f"  score + compare                                   CPU {figures['score_plus_compare_cpu_s']:.3f} s"
              "   (target ≤ 1 s)")
        print(f"  end to end                             {figures['end_to_end_s']:7.3f} s   CPU {figures['end_to_end_cpu_s']:.3f} s")
        print(f"  peak RSS, read + score + compare       {figures['peak_rss_mb']:7d} MB   (target ≤ 500 MB; "
              f"{figures['rss_after_imports_mb']} MB after imports)")
        print(f"  calibration: sum(range(10**6))         {figures['calibration_sum_range_1e6_ms']:7.1f} ms   "
              f"(load average {figures['load_average_1m']} on {figures['cpus']} CPUs)")
        print(f"  {figures['compared_cells']} cells compared, {figures['findings']} finding(s): "
              + ", ".join(figures["top"]))
        print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
