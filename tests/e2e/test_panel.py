"""A blind judge panel end to end on the demo, with scripted judges (no model calls).

Two of three judges find the top-3 answer incomplete, and the answer of JF2 (the demo's
flip_direction fault: TSLA's fall reported as a rise) unfaithful: each majority trips its
code, which then shows in the unit's verdict, its report.md row, results.json, the HTML card
data and, as rater variance, in suite.json. The round also holds the fixed calibration items:
J1 and J2 give their gold choices, J3 calls every one of them complete and faithful, so J3's
worst per-choice recall is 0 and the report says so, while the cases' expectations (a small
cases file of the test's own) only say which units went against them.
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

PLAN = {"J1": {"top 3 by net margin": "incomplete", "latest price of TSLA": "unfaithful"},
        "J2": {"top 3 by net margin": "incomplete", "latest price of TSLA": "unfaithful"},
        "J3": {"@fixed": "lenient"}}
EXPECTED = {"MD1": {"hub.incomplete_answer": "complete", "hub.unfaithful_answer": "faithful"},
            "F2": {"hub.incomplete_answer": "complete", "hub.unfaithful_answer": "faithful"},
            "O2": {"hub.incomplete_answer": "complete", "hub.unfaithful_answer": "faithful"},
            "JF2": {"hub.incomplete_answer": "complete", "hub.unfaithful_answer": "unfaithful"}}


def labelled_cases(folder: Path) -> Path:
    """The four cases as the bundle's cases.yaml has them, each with its expected judgment."""
    import yaml

    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text())
    cases = [{**c, "expected_judgment": EXPECTED[c["id"]]} for c in data["cases"] if c["id"] in EXPECTED]
    path = folder / "labelled-cases.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False))
    return path


def test_panel_majority_reaches_verdict_report_results_html_and_loss(harness_env, tmp_path):
    env = {**os.environ, "SCRIPTED_JUDGE_PLAN": json.dumps(PLAN)}
    env.pop("OBAI_DEMO_FAULTS", None)
    judge = f"{sys.executable} {REPO / 'tests' / 'scripted_judge.py'}"
    cases = labelled_cases(tmp_path)
    done = obai_here(["run", "--id", "MD1,F2,O2,JF2", "--jobs", "2", "--cases", str(cases), "--panel-command", judge],
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
    jf2 = json.loads((run_dir / "JF2.verdict.json").read_text())
    assert (jf2["verdict"], jf2["reasons"]) == ("needs_review", ["hub.unfaithful_answer"])
    assert jf2["judge_panel"]["questions"]["hub.unfaithful_answer"]["votes"] == {"faithful": 1, "unfaithful": 2}
    assert jf2["judgment"].startswith("The judge panel found the answer unfaithful to its payloads")

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
    # sigma_r^2 over the run's four double-rated units: variances 0, 1/3, 0 and 0 (JF2 complete 3) -> 1/12;
    # the fixed items are no units and never reach it.
    assert cell["rater_variance"] == pytest.approx(1 / 12)
    faith = part["by_category"]["answer_faithfulness"]
    assert faith["rater_variance"] == pytest.approx(1 / 12)  # JF2 unfaithful 2, faithful 1: 1/3 over four
    aggregate = json.loads(next((run_dir / "judging").glob("*/aggregate.json")).read_text())
    assert aggregate["rater_variance"]["hub.incomplete_answer"]["sigma_r2"] is not None

    # Graded on the 20 fixed items only: J1 and J2 right everywhere, J3 never says incomplete or unfaithful.
    cal = results["judges"]["calibration"]
    assert cal["items"] == 20 and cal["majority"]["worst_recall"]["exact"] == "8/8"
    assert {j: f["worst_recall"]["exact"] for j, f in cal["judges"].items()} == {"J1": "8/8", "J2": "8/8", "J3": "0/8"}
    assert cal["judges"]["J3"]["by_question"]["hub.incomplete_answer"]["confusion"] == {
        "complete": {"complete": 11}, "incomplete": {"complete": 9}}
    assert aggregate["calibration"]["judges"]["J3"]["balanced_accuracy"]["exact"] == "1/2"
    # The expectations grade nobody: F2's majority went against its case's, and that is F2's needs_review.
    assert [(a["unit_id"], a["question"]) for a in aggregate["expectations"]["against"]] == [
        ("F2", "hub.incomplete_answer")]
    md = (run_dir / "report.md").read_text()
    line = "J3 0/8 (0.00) (hub.unfaithful_answer unfaithful)"
    assert "Judges graded on 20 fixed calibration item(s)" in md and line in md
    assert "J3: complete → complete 11; incomplete → complete 9" in md
    assert 'id="judge-calibration"' in html and line in html
