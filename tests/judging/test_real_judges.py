"""A round answered by real model judges, replayed offline.

The round under tests/recorded/judges/default-r1 was played as the chat flow plays it: the
clean default suite with the calibration cases, three fresh sub-agents each given only its
printed prompt, their replies collected and aggregated (tests/recorded/record_judges.py keeps
it). These tests re-validate every stored reply against its packet with no model call, and
hold the panel to the labels: every clean unit decided complete, every model-only fault
decided incomplete by the majority.
"""
from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from obai_e2e.judge.panel.replay import replay

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "judges" / "default-r1"
REPO = Path(__file__).resolve().parents[2]
CODE = "hub.incomplete_answer"


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


def _aggregate(run: Path) -> dict:
    return json.loads((run / "judging" / "r1" / "aggregate.json").read_text())


def _gold(path: Path) -> dict[str, str]:
    cases = yaml.safe_load(path.read_text())["cases"]
    return {c["id"]: c["judge_gold"][CODE] for c in cases if CODE in (c.get("judge_gold") or {})}


def test_every_stored_reply_of_the_real_judges_replays_valid_with_no_model_call(run):
    result = replay(run, "r1")
    assert result["status"] == "ok"
    report = json.loads((run / "judging" / "r1" / "replay-report.json").read_text())
    assert report["ok"] and report["aggregate_identical"] and report["model_calls"] == 0
    assert [r["judge"] for r in report["responses"]] == ["J1", "J2", "J3"]
    for r in report["responses"]:
        assert r["raw_sha256_ok"] and r["validation_identical"]
        assert {p["status"] for p in r["packets"].values()} == {"valid"}, r["judge"]


def test_the_majority_calls_every_clean_answer_complete_and_every_model_only_fault_incomplete(run):
    agg = _aggregate(run)
    gold = _gold(run / "cases" / "cases.yaml")
    majority = {uid: u["majority"][CODE] for uid, u in agg["units"].items()}
    faults = sorted(uid for uid in majority if uid.startswith("CAL"))
    assert faults == ["CAL1", "CAL2", "CAL3", "CAL4"]
    for uid, choice in majority.items():
        assert choice == gold[uid.split(".")[0]], (uid, choice)
    assert {uid for uid, c in majority.items() if c == "incomplete"} == set(faults)
    undecided = [uid for uid, u in agg["units"].items() if not u["questions"][CODE]["decided"]]
    assert undecided == []


def test_the_panel_is_measured_against_the_labels_with_exact_figures(run):
    cal = _aggregate(run)["calibration"]
    assert cal["n"] == len(cal["items"]) == 52
    assert cal["majority"]["accuracy"]["exact"] == "52/52"
    assert cal["majority"]["confusion"] == {"complete": {"complete": 48}, "incomplete": {"incomplete": 4}}
    for judge, figures in cal["judges"].items():
        acc = figures["accuracy"]
        assert acc["n"] == 52
        assert Fraction(acc["exact"]) >= Fraction(4, 5), judge  # the judges_accurate gate's floor
        assert figures["abstain_rate"]["exact"] == "0/52"
        assert figures["confusion"]["incomplete"] == {"incomplete": 4}, judge  # each fault caught by each judge


def test_the_recorded_labels_are_the_default_suites_labels():
    recorded, current = _gold(RECORDED / "cases" / "cases.yaml"), _gold(REPO / "cases" / "cases.yaml")
    assert recorded == current, "the default suite's judge_gold changed: play the panel again and re-record"


def test_what_the_judges_read_carries_no_label():
    texts = [(RECORDED / "judging" / "r1" / "bundle.md").read_text()]
    texts += [p.read_text() for p in sorted((RECORDED / "judging" / "r1" / "packets").glob("*.json"))]
    for text in texts:
        assert "judge_gold" not in text and "calibration" not in text.lower()
        assert not any(f'"CAL{i}"' in text for i in range(1, 5))
