"""A round answered by real model judges, replayed offline.

The round under tests/recorded/judges/default-r1 was played as the chat flow plays it: the
default suite (its clean cases and its judged-fault cases), three fresh sub-agents each given
only its printed prompt, their replies collected and aggregated (tests/recorded/record_judges.py
keeps it, and says how it is played). These tests re-validate every stored reply against its
packet with no model call, hold the panel's majority to the cases' expectations (every clean
unit complete and faithful, every model-only fault caught by its question), and grade the judges
on the round's fixed calibration items.
"""
from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from obai_e2e.judge.panel.calibration import exact_of
from obai_e2e.judge.panel.replay import replay

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "judges" / "default-r1"
REPO = Path(__file__).resolve().parents[2]
HUB, FAITH = "hub.incomplete_answer", "hub.unfaithful_answer"
FAULT_CHOICE = {HUB: "incomplete", FAITH: "unfaithful"}
CHOICES = {HUB: ("complete", "incomplete"), FAITH: ("faithful", "unfaithful")}


def _aggregate(run: Path = RECORDED) -> dict:
    return json.loads((run / "judging" / "r1" / "aggregate.json").read_text())


@pytest.fixture()
def run(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the recorded run; run.json names its cases file relative to the bundle, here the copy."""
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    bundle = tmp_path / "bundle"  # this checkout's bundle, with the cases file the round was judged against
    bundle.mkdir()
    (bundle / "schemas").symlink_to(REPO / "schemas")
    (bundle / "cases").symlink_to(run / "cases")
    monkeypatch.setenv("OBAI_E2E_HOME", str(bundle))
    return run


def _expected(path: Path) -> dict[str, dict[str, str]]:
    """case id → its expectations (``expected_judgment``, or the older ``judge_gold``)."""
    cases = yaml.safe_load(path.read_text())["cases"]
    return {c["id"]: c.get("expected_judgment") or c.get("judge_gold") for c in cases
            if c.get("expected_judgment") or c.get("judge_gold")}


def _fault_cases(path: Path) -> set[str]:
    """The cases that switch on a demo fault through their env: the model-only faults of the suite."""
    return {c["id"] for c in yaml.safe_load(path.read_text())["cases"] if (c.get("env") or {}).get("OBAI_DEMO_FAULTS")}


def test_every_stored_reply_of_the_real_judges_replays_valid_with_no_model_call(run):
    result = replay(run, "r1")
    assert result["status"] == "ok"
    report = json.loads((run / "judging" / "r1" / "replay-report.json").read_text())
    assert report["ok"] and report["aggregate_identical"] and report["model_calls"] == 0
    assert [r["judge"] for r in report["responses"]] == ["J1", "J2", "J3"]
    for r in report["responses"]:
        assert r["raw_sha256_ok"] and r["validation_identical"]
        statuses = [p["status"] for p in r["packets"].values()]
        # A real judge may cite something the packet does not hold; that packet is refused (no vote), as recorded.
        assert set(statuses) <= {"valid", "refused"} and statuses.count("refused") <= 1, r["judge"]


def test_the_majority_meets_every_expectation_of_the_cases_it_was_judged_against(run):
    """Every clean unit complete (and faithful), every model-only fault caught by its question."""
    agg = _aggregate(run)
    expected = _expected(run / "cases" / "cases.yaml")
    faults = set()
    for uid, unit in agg["units"].items():
        for question, want in expected[uid.split(".")[0]].items():
            q = unit["questions"][question]
            assert q["decided"] and q["majority"] == want, (uid, question, q["votes"])
            if want == FAULT_CHOICE.get(question):
                faults.add(uid)
    assert {u.split(".")[0] for u in faults} == _fault_cases(run / "cases" / "cases.yaml")


def test_each_model_only_fault_is_caught_by_its_own_question_and_only_there(run):
    agg = _aggregate(run)
    tripped = {(uid, q) for uid, u in agg["units"].items() for q, e in u["questions"].items() if e["trips"]}
    assert tripped == {(f"JC{i}", HUB) for i in range(1, 5)} | {(f"JF{i}", FAITH) for i in range(1, 5)}
    assert agg["expectations"]["against"] == [] and agg["expectations"]["undecided"] == []


def test_the_judges_are_graded_on_the_fixed_items_above_the_gates_floor(run):
    cal = _aggregate(run)["calibration"]
    assert cal["items"] == 20 and cal["source"]["version"] == "v1"
    for who, figures in {"majority": cal["majority"], **cal["judges"]}.items():
        worst = figures["worst_recall"]
        assert worst["n"] >= 8 and exact_of(worst) >= Fraction(4, 5), (who, worst)  # the judges_accurate gate
        for question in (HUB, FAITH):
            assert set(figures["by_question"][question]["recall"]) == set(CHOICES[question]), who
    assert cal["majority"]["balanced_accuracy"]["exact"] == "1/1"


def test_the_recorded_expectations_are_the_default_suites_expectations():
    recorded, current = _expected(RECORDED / "cases" / "cases.yaml"), _expected(REPO / "cases" / "cases.yaml")
    assert recorded == current, "the default suite's expected_judgment changed: play the panel again and re-record"


def test_what_the_judges_read_carries_no_label_and_no_item_id():
    rnd = RECORDED / "judging" / "r1"
    texts = [(rnd / "bundle.md").read_text()]
    texts += [p.read_text() for p in sorted((rnd / "packets").glob("*.json"))]
    mapping = json.loads((rnd / "mapping.json").read_text())["packets"]
    item_ids = {m["fixed_item"] for m in mapping.values() if "fixed_item" in m}
    for text in texts:
        assert "judge_gold" not in text and "expected_judgment" not in text and "calibration" not in text.lower()
        assert "gold" not in text.lower() and not any(re.search(rf"\b{re.escape(i)}\b", text) for i in item_ids)
