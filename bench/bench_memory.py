"""Peak memory of a run against its size: headless runs, and each stage after them on a synthetic run.

  uv run python bench/bench_memory.py [--drive 2000,8000,32000] [--jobs 4]
                                      [--post 10000,100000] [--from RUN_DIR] [--shards 4] [--keep DIR]

drive: ``obai-e2e run --jobs J`` on N instant cases of bench/standin_agent.py (the inputs
and trace store of bench_peers.py), one fresh process per size; its peak RSS (the largest
of the run's process and the processes it waited for, from wait4), wall and CPU. With
``--drive-repeats R`` the N units are N/R cases run R times each, which sets what grows
with the units apart from what grows with the cases file.

post: a synthetic run of N units made from a real finished run (bench/synth_run.py: the
source's packets, verdicts and kept traces multiplied under fresh ids, with a baseline
and the same units as sealed shards; ``--post-repeats`` units a case), then every stage that follows the last verdict,
each in a fresh process, in the order a run finishes: ``results`` (results.json, its rows,
diff.json against the baseline, report.md's head), ``junit``, ``trace-pages``, ``loss``
(suite.json, TOP-REGRESSIONS.md, comparison.json against the baseline), ``html``
(report.html) and ``seal``; then ``render-report`` again as the command runs it (the
pages and the report, unchanged), and ``merge-runs`` of the shards into one run (which
finishes the merged run with every stage above). The source defaults to runs/latest.

Growth per unit is the difference of the peaks of the largest and the smallest size over
the difference of their units. The figures depend on the machine's load (it is printed);
peak RSS hardly does. Prints a table and one JSON line at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

STAGES = ("results", "junit", "trace-pages", "loss", "html", "seal")
GROWTH_LIMIT_KB = 2.0
PEAK_LIMIT_MB = 250.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_measured(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """``argv`` as a child; its exit code, wall and CPU seconds and peak RSS (MB) from wait4."""
    t0 = time.perf_counter()
    out_file = tempfile.TemporaryFile()
    err_file = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out_file, stderr=err_file, stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    out_file.seek(0)
    err_file.seek(0)
    return {"exit": proc.returncode, "wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "stdout": out_file.read().decode(errors="replace"),
            "stderr": err_file.read().decode(errors="replace")}


# ---------------------------------------------------------------- one stage, in this process


def stage(name: str, run_dir: Path, baseline: Path | None) -> dict:
    """Run one finishing stage on ``run_dir`` here (a child of the benchmark)."""
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.target import load_target_config
    from obai_e2e.rundir.meta import load_run

    meta = load_run(run_dir)
    config = load_target_config(meta.target_config_path)
    if name == "results":
        from obai_e2e.report.finalize import finalize
        from obai_e2e.run.finish import catalog_version
        from obai_e2e.run.plan import plan

        cases = load_cases_for(config, meta.cases_path)
        out = finalize(config, cases, run_dir, plan(run_dir, cases).units, catalog_version=catalog_version(config),
                       baseline=baseline)
        return {"summary": out["summary"], "diff_counts": out["diff_counts"]}
    if name == "junit":
        from obai_e2e.report.junit import write_junit

        return write_junit(run_dir)
    if name == "trace-pages":
        from obai_e2e.report.trace_pages import write_trace_pages

        return write_trace_pages(run_dir)
    if name == "loss":
        from obai_e2e.loss.score_run import score_run
        from obai_e2e.rundir.meta import plan_of

        out = score_run(run_dir, config=config, baseline=baseline, plan_path=plan_of(run_dir) or config.plan)
        return {k: out[k] for k in ("suite_score", "compared_cells", "findings")}
    if name == "html":
        from obai_e2e.report.html import write_report

        return write_report(run_dir)
    if name == "seal":
        from obai_e2e.protocol.seal import seal

        return seal(run_dir)
    raise SystemExit(f"unknown stage {name!r}")


# ---------------------------------------------------------------- the two parts


def repeat_cases(d: Path, repeats: int) -> None:
    """Rewrite bench_peers' cases file as one case per ``repeats`` units, each run ``repeats`` times."""
    import yaml

    data = yaml.safe_load((d / "cases.yaml").read_text())
    data["cases"] = [{**c, "repeats": repeats} for c in data["cases"][::repeats]]
    (d / "cases.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def drive_part(sizes: list[int], jobs: int, tmp: Path, repeats: int = 1) -> list[dict]:
    from bench_peers import Store, write_inputs

    rows = []
    for n in sizes:
        inputs = write_inputs(tmp, n)
        d = inputs["dir"]
        if repeats > 1:
            repeat_cases(d, repeats)
        work = tmp / f"drive-{n}"
        with Store(work / "store") as store:
            env = {**os.environ, **store.sdk_env, "OBAI_TRACE_STORE_DIR": str(store.dir),
                   "OBAI_E2E_RUNS": str(work / "runs"), "OPIK_PROJECT_NAME": "obai-demo"}
            env.pop("OBAI_TRACE_TAG", None)
            fig = run_measured([sys.executable, "-m", "obai_e2e", "run", "--target", str(d / "target.yaml"),
                                "--cases", str(d / "cases.yaml"), "--jobs", str(jobs), "--json"], env=env, cwd=d)
        passed = _passed(fig["stdout"])
        if fig["exit"] != 0 or passed != n:
            raise SystemExit(f"run of {n} units: exit {fig['exit']}, {passed} passed\n{fig['stderr'][-2000:]}")
        row = {"part": "drive", "stage": "run" if repeats == 1 else f"run, {repeats} repeats a case", "units": n,
               **_figures(fig)}
        rows.append(row)
        log(f"drive {n}: {row['peak_rss_mb']} MB, {row['wall_s']} s wall, {row['cpu_s']} s CPU")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)
    return rows


def _passed(stdout: str) -> int:
    try:
        return json.loads(stdout)["summary"]["pass"]
    except (ValueError, KeyError, TypeError):
        return -1


def _figures(fig: dict) -> dict:
    return {k: fig[k] for k in ("peak_rss_mb", "wall_s", "cpu_s", "exit")}


def post_part(sizes: list[int], source: Path, shards: int, tmp: Path, keep: Path | None,
              repeats: int = 10) -> list[dict]:
    from synth_run import synthesize

    rows = []
    for n in sizes:
        out = (keep or tmp) / f"post-{n}"
        t0 = time.perf_counter()
        made = synthesize(source, out, n, baseline=True, shards=shards, repeats=repeats)
        log(f"synthetic run of {made['units']} units in {time.perf_counter() - t0:.0f} s: {made['run_dir']}")
        env = {**os.environ, "OBAI_E2E_RUNS": str(out / "runs")}
        base = ["--run-dir", made["run_dir"], "--baseline", made["baseline"]]
        for name in STAGES:
            fig = run_measured([sys.executable, __file__, "--stage", name, *base], env=env, cwd=ROOT)
            rows.append(_stage_row(name, made["units"], fig))
            if name == "html":
                page = Path(made["run_dir"]) / "report.html"
                rows[-1]["report_html_mb"] = round(page.stat().st_size / 1e6, 1)
                rows[-1]["chromium_open_s"] = page_open_seconds(page)
        fig = run_measured([sys.executable, "-m", "obai_e2e", "render-report", "--run-dir", made["run_dir"]],
                           env=env, cwd=ROOT)
        rows.append(_stage_row("render-report", made["units"], fig))
        if shards:
            fig = run_measured([sys.executable, "-m", "obai_e2e", "merge-runs", *made["shards"], "--into",
                                str(out / "merged" / "2026-12-09" / "000000"), "--baseline", made["baseline"],
                                "--json"], env={**env, "OBAI_E2E_RUNS": str(out / "merged")}, cwd=ROOT)
            rows.append(_stage_row("merge-runs", made["units"], fig))
        if keep is None:
            shutil.rmtree(out, ignore_errors=True)
    return rows


CHROMIUM = Path("/usr/bin/chromium")


def page_open_seconds(path: Path) -> float | None:
    """Seconds until headless Chromium shows the first page of the units table of ``path`` (its rows: units, or
    the repeats of a case grouped; None without Chromium)."""
    if not CHROMIUM.exists():
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(path.resolve().as_uri(), timeout=600_000)
        page.wait_for_selector("tr.urow, tr.grow", timeout=600_000)
        seconds = time.perf_counter() - t0
        browser.close()
    return round(seconds, 2)


def _stage_row(name: str, units: int, fig: dict) -> dict:
    # merge-runs exits 1 or 3 for a run with failed or inconclusive units; any other stage only 0
    if fig["exit"] not in ((0, 1, 3) if name == "merge-runs" else (0,)):
        raise SystemExit(f"stage {name} on {units} units exited {fig['exit']}:\n{fig['stderr'][-3000:]}")
    row = {"part": "post", "stage": name, "units": units, **_figures(fig)}
    log(f"{name} {units}: {row['peak_rss_mb']} MB, {row['wall_s']} s wall, {row['cpu_s']} s CPU")
    return row


def _extra(r: dict) -> str:
    parts = []
    if r.get("report_html_mb") is not None:
        parts.append(f"report.html {r['report_html_mb']} MB")
    if r.get("chromium_open_s") is not None:
        parts.append(f"table shown in Chromium after {r['chromium_open_s']} s")
    return "; ".join(parts)


def growth(rows: list[dict]) -> list[dict]:
    """Per stage: KB per unit between its smallest and largest size, and the peak at the largest."""
    out = []
    for key in dict.fromkeys((r["part"], r["stage"]) for r in rows):
        rs = sorted((r for r in rows if (r["part"], r["stage"]) == key), key=lambda r: r["units"])
        lo, hi = rs[0], rs[-1]
        per_unit = None if hi["units"] == lo["units"] else \
            round((hi["peak_rss_mb"] - lo["peak_rss_mb"]) * 1024 / (hi["units"] - lo["units"]), 2)
        out.append({"part": key[0], "stage": key[1], "units": hi["units"], "peak_rss_mb": hi["peak_rss_mb"],
                    "growth_kb_per_unit": per_unit,
                    "within_limits": hi["peak_rss_mb"] <= PEAK_LIMIT_MB and (per_unit is None
                                                                            or per_unit <= GROWTH_LIMIT_KB)})
    return out


def print_table(rows: list[dict], summary: list[dict]) -> None:
    print("| part | stage | units | peak RSS MB | wall s | CPU s | |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['part']} | {r['stage']} | {r['units']:,} | {r['peak_rss_mb']} | {r['wall_s']} | {r['cpu_s']} | "
              f"{_extra(r)} |")
    print()
    print(f"| part | stage | growth KB/unit | peak RSS MB at the largest size | within {GROWTH_LIMIT_KB:g} KB/unit "
          f"and {PEAK_LIMIT_MB:g} MB |")
    print("|---|---|---|---|---|")
    for s in summary:
        g = "—" if s["growth_kb_per_unit"] is None else s["growth_kb_per_unit"]
        print(f"| {s['part']} | {s['stage']} | {g} | {s['peak_rss_mb']} | {'yes' if s['within_limits'] else 'NO'} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drive", default="2000,8000,32000", help="unit counts of headless runs ('' for none)")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--drive-repeats", type=int, default=1,
                    help="units per case in the headless runs (default 1: as many cases as units, as bench_peers)")
    ap.add_argument("--post-repeats", type=int, default=10,
                    help="units per case in the synthetic runs (default 10: 100,000 units from 10,000 cases; a "
                         "cases file of 100,000 cases is over the 8 MB a YAML file may be by default)")
    ap.add_argument("--post", default="10000,100000", help="unit counts of synthetic runs ('' for none)")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="the finished run the synthetic runs are made of (default: runs/latest)")
    ap.add_argument("--shards", type=int, default=4, help="parts merged by merge-runs (0: no merge)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the synthetic runs under this folder")
    ap.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--baseline", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.run_dir, args.baseline), default=str))
        return 0
    drive = [int(x) for x in args.drive.split(",") if x.strip()]
    post = [int(x) for x in args.post.split(",") if x.strip()]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="obai-bench-memory-") as tmp:
        tmp = Path(tmp)
        if drive:
            rows += drive_part(drive, args.jobs, tmp, args.drive_repeats)
        if post:
            from obai_e2e.base.paths import runs_root

            source = (args.source or runs_root() / "latest").resolve()
            if not (source / "results.json").exists():
                raise SystemExit(f"{source}: no results.json (finish a run first: uv run obai-e2e run)")
            rows += post_part(post, source, args.shards, tmp, args.keep, args.post_repeats)
    summary = growth(rows)
    print(f"# {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end")
    print_table(rows, summary)
    print(json.dumps({"bench": "memory", "rows": rows, "summary": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
