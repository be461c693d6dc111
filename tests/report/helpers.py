"""Test data for the report tests: hostile rewrites and replicated runs of a real run directory."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from obai_e2e.base.fsutil import dumps_json
from obai_e2e.base.mdtable import row
from obai_e2e.report.html_view import latency_text, trace_text
from obai_e2e.report.report_md import append_entry, detail_block, header
from obai_e2e.report.results import load_results, summarize

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"

# Six units that between them give every verdict: MD1 pass, A1 async pass, M3 fail
# (specialists reordered), F1 needs_review (ungrounded number), M5 needs_review (known
# over-routing), R1 inconclusive (no trace). D1 is disabled, so the run lists it.
CASE_IDS = ["MD1", "F1", "M3", "M5", "A1", "R1", "D1"]
FAULTS = "reorder_specialists@odds of a Fed,ungrounded_number@net margin and P/E,no_trace@poem"
EXPECTED = {"MD1": "pass", "A1": "pass", "M3": "fail", "F1": "needs_review", "M5": "needs_review",
            "R1": "inconclusive"}

SCRIPT_BREAK = "</script><img src=x onerror=window.__xss=1>"
ATTR_BREAK = '"><svg onload=window.__xss=1>'
JS_LINK = '<a href="javascript:alert(1)">javascript:alert(1)</a> [click](javascript:alert(1))'
HOSTILE = [SCRIPT_BREAK, ATTR_BREAK, JS_LINK]
ALL = " ".join(HOSTILE)


def obai_e2e(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the ``obai-e2e`` CLI of this checkout in a subprocess."""
    return subprocess.run([sys.executable, "-m", "obai_e2e", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def load(run_dir: Path) -> dict:
    """results.json with its units, through the harness's reader (either layout)."""
    return load_results(run_dir / "results.json")


def save(run_dir: Path, results: dict) -> None:
    """Write ``results`` back in the inline layout (schema version 1, units in results.json)."""
    inline = {k: v for k, v in results.items() if k != "units_file"}
    inline["schema_version"] = 1
    (run_dir / "results.json").write_text(dumps_json(inline), encoding="utf-8")


def write_report_md(run_dir: Path, results: dict, disabled_line: str | None = None) -> None:
    """report.md for ``results``, written by the project's own report_md functions."""
    path = run_dir / "report.md"
    path.write_text(header("2026-11-29 00:00:00 UTC", disabled_line), encoding="utf-8")
    for u in results["units"]:
        block = None
        if u["verdict"] in ("fail", "needs_review"):
            block = detail_block(u["unit_id"], u["verdict"], u["query"], u["expected"], u["observed"], u["judgment"])
        append_entry(path, row([u["unit_id"], u["feature"], u["verdict"], ", ".join(u["reasons"]), trace_text(u),
                                latency_text(u["latency"])]), block)


def make_hostile(run_dir: Path) -> dict:
    """Rewrite a finished run so that every untrusted string carries the hostile payloads."""
    results = load(run_dir)
    run = results["run"]
    run["target"]["name"] = ATTR_BREAK
    run["target"]["version"] = SCRIPT_BREAK
    for i, u in enumerate(results["units"]):
        u["query"] = f"{ALL} :: {u['query']}"
        u["answer"] = f"answer {ALL}"
        if u.get("curated_trace"):
            u["curated_trace"] += f"\nFINAL RESPONSE:\n    {ALL}\n"
        if u.get("followup_curated_trace"):
            u["followup_curated_trace"] += f"\nFOLLOW-UP {ALL}\n"
        if u["verdict"] != "pass":
            u["judgment"] = f"judgment {ALL}"
            u["expected"] = f"expected {SCRIPT_BREAK}"
            u["observed"] = f"observed {ATTR_BREAK}"
            u["reasons"] = [SCRIPT_BREAK] + u["reasons"][1:]
        for o in u["rule_outcomes"]:
            if o["status"] in ("fail", "needs_review"):
                o["detail"] = f"detail {ALL}"
                for ev in o["evidence"]:
                    ev["excerpt"] = f"excerpt {ALL}"
                    if ev.get("span_id"):
                        ev["span_id"] = ATTR_BREAK
        u["labels"] = {**u["labels"], "intent": SCRIPT_BREAK}
        if i == 0:
            u["feature"] = ATTR_BREAK
            u["judge_panel"] = {"majority": SCRIPT_BREAK, "judges": [ATTR_BREAK, JS_LINK], "kappa": 0.5}
    results["disabled"] = [{"id": "D1", "reason": f"reason {ALL}"}]
    save(run_dir, results)
    write_report_md(run_dir, results, disabled_line=f"skipped 1 disabled cases: {SCRIPT_BREAK}")
    (run_dir / "suite.json").write_text(json.dumps({
        "catalog_version": SCRIPT_BREAK, "mode": "A", "provenance": "synthetic", "mde": 0.05,
        "suite_score": 0.12, "completion_rate": 1.0, "warnings": [ALL],
        "partitions": [{"labels": {"intent": SCRIPT_BREAK}, "weight": 1, "n": 1, "n_min": 576, "loss": 0.1,
                        "stddev_between": None, "se": None, "stddev_within": 0.0, "coverage": 0.0,
                        "status": "unterbelegt", "by_category": {ATTR_BREAK: 0.1}}],
    }), encoding="utf-8")
    (run_dir / "TOP-REGRESSIONS.md").write_text(
        "| partition | kategorie | delta | ci_low | ci_high | n | run_id | log_zitat |\n"
        "|---|---|---|---|---|---|---|---|\n"
        f"| intent=x | {ATTR_BREAK} | 0.4 | 0.2 | 0.6 | 12 | r1 | {SCRIPT_BREAK} {JS_LINK} |\n", encoding="utf-8")
    return results


def replicate(run_dir: Path, n: int) -> dict:
    """Grow a run to ``n`` units of as many cases: copies of its units under new ids (results.json and report.md)."""
    results = load(run_dir)
    base = results["units"]
    units = []
    for i in range(n):
        u = json.loads(json.dumps(base[i % len(base)]))
        u["unit_id"] = u["case_id"] = f"{u['case_id']}-{i:05d}"
        units.append(u)
    results["units"] = units
    summary = summarize(units)
    results["summary"] = summary
    save(run_dir, results)
    write_report_md(run_dir, results)
    return results
