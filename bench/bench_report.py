"""Benchmark of report.html at scale: size and time for a 2,000-unit run.

Takes a real finished run directory, replicates its units under new ids until there are
``--units`` of them (results.json, report.md rows and detail blocks, run.json), renders
report.html and results.junit.xml, and prints seconds and MB; with Chromium present it
also times opening the page (until the first page of cards is on screen). Prints the
figures as text and, last, as one JSON line.

A baseline with the same units (every tenth verdict flipped between pass and fail) is
built beside it, so the page carries its "Changes since" section and the charts.

    uv run python bench/bench_report.py [--from RUN_DIR] [--units 2000] [--no-browser] [--keep]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from obai_e2e.base.fsutil import dumps_json  # noqa: E402
from obai_e2e.base.mdtable import row  # noqa: E402
from obai_e2e.base.paths import runs_root  # noqa: E402
from obai_e2e.report.diff import build_diff  # noqa: E402
from obai_e2e.report.html import write_report  # noqa: E402
from obai_e2e.report.html_view import latency_text, trace_text  # noqa: E402
from obai_e2e.report.junit import write_junit  # noqa: E402
from obai_e2e.report.report_md import append_entry, detail_block, ensure_header  # noqa: E402
from obai_e2e.report.results import read_results_json, summarize  # noqa: E402
from obai_e2e.report.rows import write_streamed  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def replicate(source: Path, target: Path, n: int) -> None:
    """A run directory like ``source`` with ``n`` units (copies of its units under new ids)."""
    results = read_results_json(source / "results.json")
    base = results["units"]
    units = []
    for i in range(n):
        u = json.loads(json.dumps(base[i % len(base)]))
        u["unit_id"] = f"{u['case_id']}-{i:05d}"
        units.append(u)
    results["units"] = units
    summary = summarize(units)
    results["summary"] = summary
    target.mkdir(parents=True, exist_ok=True)
    run = json.loads((source / "run.json").read_text(encoding="utf-8"))
    run["units"] = [u["unit_id"] for u in units]
    (target / "run.json").write_text(dumps_json(run), encoding="utf-8")
    write_streamed(target, results)
    report = target / "report.md"
    ensure_header(report, "2026-11-29 00:00:00 UTC", None)
    for u in units:
        block = None
        if u["verdict"] in ("fail", "needs_review"):
            block = detail_block(u["unit_id"], u["verdict"], u["query"], u["expected"], u["observed"], u["judgment"])
        append_entry(report, row([u["unit_id"], u["feature"], u["verdict"], ", ".join(u["reasons"]),
                                  trace_text(u), latency_text(u["latency"])]), block)


def with_baseline(run_dir: Path, base_dir: Path) -> None:
    """A baseline run of the same units, every tenth verdict flipped, and the diff.json against it."""
    results = read_results_json(run_dir / "results.json")
    base = json.loads(json.dumps(results))
    base["run"]["run_id"] = "bench/baseline"
    for i, u in enumerate(base["units"]):
        if i % 10 == 0:
            u["verdict"], u["reasons"] = ("fail", ["hub.empty_response"]) if u["verdict"] != "fail" else ("pass", [])
        u["latency"] = {**u["latency"], "turn_ms": int((u["latency"].get("turn_ms") or 0) * 0.9)}
    base_dir.mkdir(parents=True, exist_ok=True)
    write_streamed(base_dir, base)
    diff = build_diff(results["run"]["run_id"], results["units"], base)
    diff["baseline"]["results"] = str(base_dir / "results.json")
    (run_dir / "diff.json").write_text(dumps_json(diff), encoding="utf-8")


def browser_open_seconds(path: Path) -> float | None:
    if not CHROMIUM.exists():
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("article.unit")
        seconds = time.perf_counter() - t0
        browser.close()
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="a finished run directory (default: runs/latest)")
    ap.add_argument("--units", type=int, default=2000)
    ap.add_argument("--no-browser", action="store_true", help="skip timing the page in Chromium")
    ap.add_argument("--keep", action="store_true", help="keep the generated run directory")
    args = ap.parse_args()
    source = (args.source or runs_root() / "latest").resolve()
    if not (source / "results.json").exists():
        print(f"{source}: no results.json (finish a run first: uv run obai-e2e run --smoke)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-report-"))
    run_dir = work / "run"
    try:
        t0 = time.perf_counter()
        replicate(source, run_dir, args.units)
        with_baseline(run_dir, work / "baseline")
        gen_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = write_report(run_dir)
        render_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_report(run_dir)
        rerender_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        junit = write_junit(run_dir)
        junit_s = time.perf_counter() - t0
        results_mb = (run_dir / "results.json").stat().st_size / 1e6
        html_mb = out["bytes"] / 1e6
        open_s = None if args.no_browser else browser_open_seconds(Path(out["report_html"]))
        figures = {"units": args.units, "source": str(source), "results_json_mb": round(results_mb, 2),
                   "report_html_mb": round(html_mb, 2), "render_s": round(render_s, 3),
                   "rerender_s": round(rerender_s, 3), "junit_s": round(junit_s, 3),
                   "junit_mb": round(junit["bytes"] / 1e6, 3),
                   "browser_open_s": None if open_s is None else round(open_s, 3),
                   "generate_s": round(gen_s, 2)}
        print(f"{args.units} units (from {source})")
        print(f"results.json      {results_mb:8.2f} MB")
        print(f"report.html       {html_mb:8.2f} MB   render {render_s:.3f} s (again: {rerender_s:.3f} s)")
        print(f"results.junit.xml {junit['bytes'] / 1e6:8.3f} MB   {junit_s:.3f} s")
        if open_s is not None:
            print(f"Chromium: first page of cards after {open_s:.3f} s")
        if args.keep:
            print(f"kept: {run_dir}")
        print(json.dumps(figures, sort_keys=True))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
