"""The panel against known answers: accuracy, abstain rate and confusion on hand-computed vectors,
the same figures from stored replies through aggregate.json, and the gate on them both ways."""
from __future__ import annotations

import json

import pytest
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.calibration import calibration, exact_of, for_results, lines
from obai_e2e.judge.panel.responses import store
from obai_e2e.protocol.gates import FAIL, PASS, SKIP, c_min_judge_accuracy

from .helpers import entry, label_run, make_round

JUDGES = ["J1", "J2", "J3"]
HUB = "hub.incomplete_answer"


def _q(choices: dict, majority, applies: bool = True) -> dict:
    return {"applies": applies, "choices": choices, "majority": majority if applies else None}


# Six units as aggregate.json holds them. U4 has no label, U5's question does not apply:
# neither counts. J3 gave no vote on U3 (its reply had no valid entry there).
UNITS = {
    "U1": {"judges": JUDGES, "questions": {HUB: _q({"J1": "complete", "J2": "complete", "J3": "incomplete"},
                                                    "complete")}},
    "U2": {"judges": JUDGES, "questions": {HUB: _q({"J1": "incomplete", "J2": "abstain", "J3": "incomplete"},
                                                    "incomplete")}},
    "U3": {"judges": JUDGES, "questions": {HUB: _q({"J1": "complete", "J2": "incomplete"}, "abstain")}},
    "U4": {"judges": JUDGES, "questions": {HUB: _q({"J1": "complete", "J2": "complete", "J3": "complete"},
                                                    "complete")}},
    "U5": {"judges": JUDGES, "questions": {HUB: _q({"J1": None, "J2": None, "J3": None}, None, applies=False)}},
    "U6": {"judges": JUDGES, "questions": {"answer_clarity": _q({"J1": "meets", "J2": "fails", "J3": "fails"},
                                                                "fails")}},
}
GOLD = {"U1": {HUB: "complete"}, "U2": {HUB: "incomplete"}, "U3": {HUB: "incomplete"},
        "U5": {HUB: "complete"}, "U6": {"answer_clarity": "fails", HUB: "complete"}}


def test_accuracy_abstain_rate_and_confusion_on_a_hand_computed_vector():
    cal = calibration(UNITS, JUDGES, GOLD, {"found": True})
    assert cal["n"] == 4 and cal["labelled_units"] == 4  # U1, U2, U3, U6
    j1, j2, j3 = (cal["judges"][j] for j in JUDGES)
    # J1: U1 right, U2 right, U3 wrong, U6 wrong.
    assert j1["accuracy"] == {"value": 0.5, "exact": "2/4", "n": 4}
    assert j1["abstain_rate"] == {"value": 0.0, "exact": "0/4", "n": 4}
    # J2: U1, U3, U6 right; its abstention on U2 is not right, and counts in its abstain rate.
    assert j2["accuracy"]["exact"] == "3/4" and j2["abstain_rate"]["exact"] == "1/4"
    # J3: U2 and U6 right; no vote on U3 is not right, and not an answer for the abstain rate.
    assert j3["accuracy"]["exact"] == "2/4" and j3["abstain_rate"] == {"value": 0.0, "exact": "0/3", "n": 3}
    assert j3["no_vote"] == 1
    assert j3["confusion"] == {"complete": {"incomplete": 1}, "fails": {"fails": 1},
                               "incomplete": {"incomplete": 1, "no vote": 1}}
    # The majority: U1, U2, U6 right; U3 undecided.
    assert cal["majority"]["accuracy"]["exact"] == "3/4" and cal["majority"]["undecided"]["exact"] == "1/4"
    assert cal["majority"]["confusion"] == {"complete": {"complete": 1}, "fails": {"fails": 1},
                                            "incomplete": {"abstain": 1, "incomplete": 1}}
    hub = cal["by_question"][HUB]
    assert hub["n"] == 3 and hub["judges"]["J2"]["accuracy"]["exact"] == "2/3"
    assert hub["judges"]["J2"]["abstain_rate"]["exact"] == "1/3"
    assert cal["by_question"]["answer_clarity"]["judges"]["J1"]["accuracy"]["exact"] == "0/1"
    assert [(i["unit_id"], i["question"]) for i in cal["items"]] == [
        ("U1", HUB), ("U2", HUB), ("U3", HUB), ("U6", "answer_clarity")]
    assert exact_of(j2["accuracy"]) * 4 == 3  # the fraction a gate compares


def test_nothing_labelled_gives_no_figures():
    cal = calibration(UNITS, JUDGES, {"U4": {"answer_clarity": "meets"}}, {"found": True})
    assert cal["n"] == 0 and cal["judges"]["J1"]["accuracy"] == {"value": None, "exact": None, "n": 0}
    assert for_results(cal) is None and lines(cal) == []


def test_report_lines_state_n_beside_every_figure():
    text = "\n".join(lines(calibration(UNITS, JUDGES, GOLD, {"found": True})))
    assert "4 labelled question(s) on 4 unit(s)" in text
    assert "majority accuracy 3/4 (0.75), undecided 1/4 (0.25)" in text
    assert "J3 accuracy 2/4 (0.50), abstained 0/3 (0.00), no vote 1" in text
    assert "Confusion, J3: complete → incomplete 1; fails → fails 1; incomplete → incomplete 1, no vote 1." in text


# -- from stored replies -----------------------------------------------------------------

def _judged(run, config_cases, replies: dict[str, dict[str, str]]):
    """A labelled copy of the demo run, judged by three judges (judge → unit → choice), aggregated."""
    label_run(run, {"MD1": {HUB: "complete"}, "S2": {HUB: "complete"}, "A1": {HUB: "complete"},
                    "O2": {HUB: "incomplete"}})
    rnd = make_round(run, *config_cases)
    for judge, choices in replies.items():
        raw = json.dumps({"packets": [entry(rnd, uid, c) for uid, c in choices.items()]})
        store(run, "r1", judge, "test-model", raw)
    out = aggregate_round(run, "r1")
    return out, json.loads(rnd.aggregate_path.read_text())


ALL_RIGHT = {"MD1": "complete", "S2": "complete", "A1": "complete", "O2": "incomplete"}


def test_aggregate_compares_stored_answers_with_the_labels(run, config_cases):
    out, agg = _judged(run, config_cases, {
        "J1": ALL_RIGHT,
        "J2": {**ALL_RIGHT, "O2": "complete"},                    # 3/4
        "J3": {**ALL_RIGHT, "S2": "abstain", "A1": "incomplete"},  # 2/4, one abstention
    })
    cal = agg["calibration"]
    assert cal["n"] == 4 and cal["source"]["found"] is True
    assert {j: f["accuracy"]["exact"] for j, f in cal["judges"].items()} == {"J1": "4/4", "J2": "3/4", "J3": "2/4"}
    assert cal["judges"]["J3"]["abstain_rate"]["exact"] == "1/4"
    assert cal["majority"]["accuracy"]["exact"] == "4/4"
    assert cal["judges"]["J2"]["confusion"] == {"complete": {"complete": 3}, "incomplete": {"complete": 1}}
    assert out["calibration"]["judges"]["J2"]["accuracy"]["exact"] == "3/4"  # what aggregate-judges prints


@pytest.mark.parametrize("value, status, named", [
    (0.5, PASS, "J1 4/4 (1.00), J2 3/4 (0.75), J3 2/4 (0.50)"),  # 2/4 is not below 1/2
    (0.75, FAIL, "J3 2/4 (0.50)"),                               # 3/4 is not below 3/4, 2/4 is
])
def test_the_accuracy_gate_fails_a_judge_below_its_floor(run, config_cases, value, status, named):
    _judged(run, config_cases, {"J1": ALL_RIGHT, "J2": {**ALL_RIGHT, "O2": "complete"},
                                "J3": {**ALL_RIGHT, "S2": "incomplete", "A1": "incomplete"}})
    check = c_min_judge_accuracy({"id": "judges_accurate", "kind": "min_judge_accuracy", "value": value},
                                 run, {}, None)
    assert check.status == status and named in check.detail
    if status == FAIL:
        assert "J2" not in check.detail and "over 4 labelled questions" in check.detail
    majority = c_min_judge_accuracy({"id": "m", "kind": "min_judge_accuracy", "of": "majority", "value": 1},
                                    run, {}, None)
    assert majority.status == PASS and "majority 4/4" in majority.detail


def test_the_accuracy_gate_without_enough_labels_is_a_missing_input(run, config_cases):
    cond = {"id": "judges_accurate", "kind": "min_judge_accuracy", "value": 0.8, "if_missing": "skip"}
    assert c_min_judge_accuracy(cond, run, {}, None).status == SKIP  # no round aggregated
    _judged(run, config_cases, {"J1": ALL_RIGHT, "J2": ALL_RIGHT, "J3": ALL_RIGHT})
    assert c_min_judge_accuracy({**cond, "min_items": 5}, run, {}, None).status == SKIP
    check = c_min_judge_accuracy({**cond, "min_items": 5, "if_missing": "fail"}, run, {}, None)
    assert check.status == FAIL and "4 labelled questions, at least 5 needed" in check.detail
    assert c_min_judge_accuracy({**cond, "question": HUB}, run, {}, None).status == PASS
    assert c_min_judge_accuracy({**cond, "question": "answer_clarity"}, run, {}, None).status == SKIP
