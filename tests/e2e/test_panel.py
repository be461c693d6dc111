"""A blind judge panel end to end on the demo, with scripted judges (no model calls).

Two of three judges find the top-3 answer incomplete: the majority trips
hub.incomplete_answer, which then shows in the unit's verdict, its report.md row,
results.json, the HTML card data and, as rater variance, in suite.json. The three cases carry
judge_gold (a small cases file of the test's own), so the panel is also measured against it:
J3 misses the incomplete answer.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from obai_e2e.report.report_md import read_rows
from obai_e2e.report.results import load_results

from .conftest import REPO, obai_here

pytestmark = pytest.mark.slow

PLAN = {"J1": {"top 3 by net margin": "incomplete"}, "J2": {"top 3 by net margin": "incomplete"}}
GOLD = {"MD1": "complete", "F2": "incomplete", "O2": "complete"}


def labelled_cases(folder: Path) -> Path:
    """The three cases as the bundle's cases.yaml has them, each with its expected judgment."""
    import yaml

    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text())
    cases = [{**c, "judge_gold": {"hub.incomplete_answer": GOLD[c["id"]]}} for c in data["cases"] if c["id"] in GOLD]
    path = folder / "labelled-cases.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False))
    return path


def test_panel_majority_reaches_verdict_report_results_html_and_loss(harness_env, tmp_path):
    env = {**os.environ, "SCRIPTED_JUDGE_PLAN": json.dumps(PLAN)}
    env.pop("OBAI_DEMO_FAULTS", None)
    judge = f"{sys.executable} {REPO / 'tests' / 'scripted_judge.py'}"
    cases = labelled_cases(tmp_path)
    done = obai_here(["run", "--id", "MD1,F2,O2", "--jobs", "2", "--cases", str(cases), "--panel-command", judge],
                     REPO, env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    run_dir = Path(out["run_dir"])

    verdict = json.loads((run_dir / "F2.verdict.json").read_text())
    assert verdict["verdict"] == "needs_review" and verdict["reasons"] == ["hub.incomplete_answer"]
    assert verdict["judged_by"] == "mechanical+panel"
    q = verdict["judge_panel"]["questions"]["hub.incomplete_answer"]
    assert q["trips"] and q["votes"] == {"complete": 1, "incomplete": 2}
    assert json.loads((run_dir / "MD1.verdict.json").read_text())["verdict"] == "pass"

    rows = {r["ID"]: r for r in read_rows(run_dir / "report.md")}
    assert rows["F2"]["Verdict"] == "needs_review" and rows["F2"]["Reason"] == "hub.incomplete_answer"
    assert "judge panel found the answer incomplete" in (run_dir / "report.md").read_text()

    results = load_results(run_dir / "results.json")
    unit = next(u for u in results["units"] if u["unit_id"] == "F2")
    assert unit["judge_panel"]["ratings"]["hub.incomplete_answer"] == [1, 1, 0]

    html = (run_dir / "report.html").read_text()
    data = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S)
    assert data, "the report embeds its unit data"
    assert "hub.incomplete_answer" in data.group(1) and "incomplete" in data.group(1)

    suite = json.loads((run_dir / "suite.json").read_text())
    part = next(p for p in suite["partitions"] if p["labels"].get("intent") == "fundamentals")
    cell = part["by_category"]["answer_completeness"]
    # sigma_r^2 over the run's three double-rated units: variances 0, 1/3 and 0 -> 1/9.
    assert cell["rater_variance"] == pytest.approx(1 / 9)
    aggregate = json.loads(next((run_dir / "judging").glob("*/aggregate.json")).read_text())
    assert aggregate["rater_variance"]["hub.incomplete_answer"]["sigma_r2"] is not None

    # Measured against the labels: J1 and J2 3/3, J3 2/3 (it called F2 complete), the majority 3/3.
    cal = results["judges"]["calibration"]
    assert cal["n"] == 3 and cal["majority"]["accuracy"]["exact"] == "3/3"
    assert {j: f["accuracy"]["exact"] for j, f in cal["judges"].items()} == {"J1": "3/3", "J2": "3/3", "J3": "2/3"}
    assert cal["judges"]["J3"]["confusion"] == {"complete": {"complete": 2}, "incomplete": {"complete": 1}}
    assert aggregate["calibration"]["judges"]["J3"]["accuracy"]["exact"] == "2/3"
    line = "majority accuracy 3/3 (1.00)"
    assert line in (run_dir / "report.md").read_text() and "Confusion, J3: complete → complete 2; " \
        "incomplete → complete 1." in (run_dir / "report.md").read_text()
    assert 'id="judge-calibration"' in html and line in html and "J3 accuracy 2/3 (0.67)" in html
