"""The panel graded on fixed items: per-choice recall, balanced accuracy and confusion on hand-computed
vectors, the same figures from stored replies through aggregate.json, and the gate on them both ways:
an always-"complete" judge fails it, an honest judge passes it however the agent behaves."""
from __future__ import annotations

import json

import pytest
from obai_e2e.judge.panel import calibration_v1
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.calibration import calibration, exact_of, for_results, lines, worst_recall
from obai_e2e.judge.panel.responses import store
from obai_e2e.judge.verdict import mechanical_verdict
from obai_e2e.protocol.gates import FAIL, PASS, SKIP, c_min_judge_accuracy

from .helpers import entry, gold_entry, label_run, make_round

JUDGES = ["J1", "J2", "J3"]
HUB, FAITH = "hub.incomplete_answer", "hub.unfaithful_answer"


def _q(choices: dict, majority, applies: bool = True) -> dict:
    return {"applies": applies, "choices": choices, "majority": majority if applies else None}


def _item(name: str, gold: dict, questions: dict) -> tuple[dict, dict]:
    return {"judges": JUDGES, "questions": questions}, {"fixed_item": name, "gold": gold}


# Five fixed items as aggregate.json holds them (packet ids p1-p5). J1 is right everywhere; J2 calls
# every answer complete and faithful (the lenient judge); J3 abstains on p2 and gave no vote on p4.
# p5 has no payload: faithfulness does not apply there, and does not count.
ITEMS = dict(
    p1=_item("A", {HUB: "complete", FAITH: "faithful"}, {
        HUB: _q({"J1": "complete", "J2": "complete", "J3": "complete"}, "complete"),
        FAITH: _q({"J1": "faithful", "J2": "faithful", "J3": "faithful"}, "faithful")}),
    p2=_item("B", {HUB: "incomplete", FAITH: "faithful"}, {
        HUB: _q({"J1": "incomplete", "J2": "complete", "J3": "abstain"}, "abstain"),
        FAITH: _q({"J1": "faithful", "J2": "faithful", "J3": "faithful"}, "faithful")}),
    p3=_item("C", {HUB: "complete", FAITH: "unfaithful"}, {
        HUB: _q({"J1": "complete", "J2": "complete", "J3": "complete"}, "complete"),
        FAITH: _q({"J1": "unfaithful", "J2": "faithful", "J3": "unfaithful"}, "unfaithful")}),
    p4=_item("D", {HUB: "incomplete", FAITH: "unfaithful"}, {
        HUB: _q({"J1": "incomplete", "J2": "complete"}, "abstain"),
        FAITH: _q({"J1": "unfaithful", "J2": "faithful"}, "abstain")}),
    p5=_item("E", {HUB: "complete"}, {
        HUB: _q({"J1": "complete", "J2": "complete", "J3": "incomplete"}, "complete"),
        FAITH: _q({"J1": None, "J2": None, "J3": None}, None, applies=False)}),
)
UNITS = {pid: unit for pid, (unit, _) in ITEMS.items()}
FIXED = {pid: fixed for pid, (_, fixed) in ITEMS.items()}
SOURCE = {"path": "calibration.v1.json", "version": "v1", "sha256": "x", "items": 5, "min_per_choice": 1}


def test_per_choice_recall_balanced_accuracy_and_confusion_on_a_hand_computed_vector():
    cal = calibration(UNITS, FIXED, JUDGES, SOURCE)
    assert cal["items"] == 5 and cal["n"] == 9  # 5 completeness rows, 4 faithfulness rows (p5's does not apply)
    j1, j2, j3 = (cal["judges"][j] for j in JUDGES)
    assert j1["worst_recall"]["exact"] == "2/2" and j1["balanced_accuracy"]["exact"] == "1/1"
    # J2 never says incomplete or unfaithful: recall 0 on both, though it is right on 5 of 9 rows.
    hub2 = j2["by_question"][HUB]
    assert hub2["recall"] == {"complete": {"value": 1.0, "exact": "3/3", "n": 3},
                              "incomplete": {"value": 0.0, "exact": "0/2", "n": 2}}
    assert j2["accuracy"]["exact"] == "5/9" and j2["worst_recall"] == {
        "value": 0.0, "exact": "0/2", "n": 2, "question": HUB, "choice": "incomplete"}
    assert hub2["balanced_accuracy"] == {"value": 0.5, "exact": "1/2", "n": 5}
    assert j2["balanced_accuracy"]["exact"] == "1/2"  # the mean over both questions of 1/2
    assert hub2["confusion"] == {"complete": {"complete": 3}, "incomplete": {"complete": 2}}
    # J3: its abstention (p2) and its missing vote (p4) are not right; p5 wrong.
    hub3 = j3["by_question"][HUB]
    assert hub3["recall"]["complete"]["exact"] == "2/3" and hub3["recall"]["incomplete"]["exact"] == "0/2"
    assert hub3["confusion"] == {"complete": {"complete": 2, "incomplete": 1}, "incomplete": {"abstain": 1, "no vote": 1}}
    assert hub3["abstain_rate"] == {"value": 0.25, "exact": "1/4", "n": 4} and hub3["no_vote"] == 1
    faith3 = j3["by_question"][FAITH]
    assert faith3["recall"]["unfaithful"]["exact"] == "1/2" and faith3["balanced_accuracy"]["exact"] == "3/4"
    assert j3["balanced_accuracy"]["exact"] == "13/24"  # (1/3 + 3/4) / 2
    assert j3["no_vote"] == 2 and j3["abstain_rate"]["exact"] == "1/7"
    # The majority: p2 and p4 undecided.
    m = cal["majority"]
    assert m["undecided"]["exact"] == "3/9" and m["worst_recall"]["exact"] == "0/2"
    assert m["by_question"][FAITH]["recall"]["unfaithful"]["exact"] == "1/2"
    assert exact_of(j3["balanced_accuracy"]) * 24 == 13  # the fraction a gate compares
    assert [(r["item"], r["question"]) for r in cal["rows"]][:3] == [("A", HUB), ("A", FAITH), ("B", HUB)]


def test_a_round_without_fixed_items_gives_no_figures():
    cal = calibration({}, {}, JUDGES, None)
    assert cal["n"] == 0 and cal["judges"]["J1"]["worst_recall"]["n"] == 0
    assert for_results(cal) is None and lines(cal) == []


def test_report_lines_state_n_beside_every_figure():
    text = "\n".join(lines(calibration(UNITS, FIXED, JUDGES, SOURCE)))
    assert "Judges graded on 5 fixed calibration item(s) (calibration catalog v1, 9 question(s))" in text
    assert f"J2 0/2 (0.00) ({HUB} incomplete)" in text and "J1 2/2 (1.00)" in text
    assert "balanced accuracy majority" in text and "J3 13/24 (0.54)" in text
    assert f"Recall on {HUB} (per gold choice): majority complete 3/3 (1.00), incomplete 0/2 (0.00)" in text
    assert f"Confusion on {HUB} (gold → given): " in text and "J3: complete → complete 2, incomplete 1; " \
                                                               "incomplete → abstain 1, no vote 1" in text


def test_the_older_form_of_rounds_graded_on_case_labels_is_kept_for_their_replay():
    units = {"U1": {"judges": JUDGES, "questions": {HUB: _q({"J1": "complete", "J2": "incomplete", "J3": "complete"},
                                                             "complete")}}}
    cal = calibration_v1.calibration(units, JUDGES, {"U1": {HUB: "complete"}}, {"found": True})
    assert cal["version"] == 1 and cal["labelled_units"] == 1 and cal["judges"]["J2"]["accuracy"]["exact"] == "0/1"
    assert for_results(cal) is None  # never reported as a grading on fixed items


# -- from stored replies -----------------------------------------------------------------

LIVE = {"MD1": "complete", "S2": "complete", "A1": "complete", "O2": "complete"}
EXPECTED = {c: {HUB: "complete", FAITH: "faithful"} for c in LIVE}


def _judged(run, config_cases, judges: dict, live: dict | None = None):
    """The demo run with its cases' expectations, judged by ``judges`` (judge → how it answers the fixed items:
    "gold", "lenient" or a tuple of questions it gets wrong on every item), aggregated."""
    label_run(run, EXPECTED)
    rnd = make_round(run, *config_cases)
    for judge, how in judges.items():
        packets = [entry(rnd, uid, c) for uid, c in (live or LIVE).items()]
        for pid in sorted(rnd.fixed):
            packets.append(entry(rnd, pid, "complete") if how == "lenient" else
                           gold_entry(rnd, pid, flip=() if how == "gold" else how))
        store(run, "r1", judge, "test-model", json.dumps({"packets": packets}))
    out = aggregate_round(run, "r1")
    return rnd, out, json.loads(rnd.aggregate_path.read_text())


def test_stored_replies_are_graded_on_the_fixed_items_only(run, config_cases):
    rnd, out, agg = _judged(run, config_cases, {"J1": "gold", "J2": "gold", "J3": "lenient"})
    cal = agg["calibration"]
    assert cal["items"] == len(rnd.fixed) == 20 and cal["source"]["version"] == "v1"
    assert {j: f["worst_recall"]["exact"] for j, f in cal["judges"].items()} == {"J1": "8/8", "J2": "8/8", "J3": "0/8"}
    assert cal["judges"]["J3"]["by_question"][HUB]["recall"]["complete"]["exact"] == "11/11"
    assert cal["majority"]["balanced_accuracy"]["exact"] == "1/1"
    assert out["calibration"]["judges"]["J3"]["worst_recall"]["exact"] == "0/8"  # what aggregate-judges prints
    # the fixed items are no units: never in units, rater variance or the undecided pairs
    assert set(agg["units"]) == set(LIVE) and agg["rater_variance"][HUB]["m"] == len(LIVE)


def test_an_always_complete_judge_fails_the_gate_and_honest_judges_pass_it(run, config_cases):
    _judged(run, config_cases, {"J1": "gold", "J2": "gold", "J3": "lenient"})
    cond = {"id": "judges_accurate", "kind": "min_judge_accuracy", "value": 0.8, "min_items": 8}
    check = c_min_judge_accuracy(cond, run, {}, None)
    assert check.status == FAIL and "J3 0/8 (0.00) on hub.unfaithful_answer unfaithful" in check.detail
    assert "J1" not in check.detail and "20 fixed items" in check.detail
    majority = c_min_judge_accuracy({**cond, "of": "majority", "value": 1}, run, {}, None)
    assert majority.status == PASS and "majority 8/8 (1.00)" in majority.detail


def test_the_gate_floor_is_compared_as_an_exact_fraction(run, config_cases):
    # J2 misses every unfaithful item and says "unfaithful" of every faithful one: recall 0 on both choices
    _judged(run, config_cases, {"J1": "gold", "J2": (FAITH,), "J3": "gold"})
    cal = json.loads((run / "judging" / "r1" / "aggregate.json").read_text())["calibration"]
    assert worst_recall(cal, "J2")["question"] == FAITH and worst_recall(cal, "J2", HUB)["exact"] == "9/9"
    cond = {"id": "judges_accurate", "kind": "min_judge_accuracy", "value": 1}
    assert c_min_judge_accuracy({**cond, "question": HUB}, run, {}, None).status == PASS
    assert c_min_judge_accuracy({**cond, "question": FAITH}, run, {}, None).status == FAIL


def test_an_honest_panel_keeps_full_accuracy_while_the_agent_regresses(run, config_cases):
    """The agent's answers got worse (the honest panel calls two of them incomplete, against their cases'
    expectation "complete"): the judges still score full marks on the fixed items, pass the gate, and the
    regressions are the units' own needs_review, listed against the expectations."""
    live = {**LIVE, "MD1": "incomplete", "O2": "incomplete"}
    rnd, out, agg = _judged(run, config_cases, {j: "gold" for j in JUDGES}, live)
    assert {j: f["worst_recall"]["exact"] for j, f in agg["calibration"]["judges"].items()} == \
        {"J1": "8/8", "J2": "8/8", "J3": "8/8"}
    cond = {"id": "judges_accurate", "kind": "min_judge_accuracy", "value": 0.8, "min_items": 8}
    assert c_min_judge_accuracy(cond, run, {}, None).status == PASS
    exp = agg["expectations"]
    assert exp["met"] == 2 + 4 and [(a["unit_id"], a["majority"]) for a in exp["against"]] == \
        [("MD1", "incomplete"), ("O2", "incomplete")]  # 4 units × 2 questions, 2 of them against
    assert out["expectations"]["against"][0] == f"MD1:{HUB} (expected complete, majority incomplete)"
    from obai_e2e.judge.rubric import check_packet
    from obai_e2e.drive.packet_record import load_packet

    config, cases = config_cases
    verdict = mechanical_verdict(check_packet(load_packet(run, "MD1"), cases.by_id("MD1"), config),
                                 agg["units"]["MD1"])
    assert verdict["verdict"] == "needs_review" and HUB in verdict["reasons"]


def test_the_gate_without_fixed_items_is_a_missing_input(run, config_cases):
    cond = {"id": "judges_accurate", "kind": "min_judge_accuracy", "value": 0.8, "if_missing": "skip"}
    assert c_min_judge_accuracy(cond, run, {}, None).status == SKIP  # no round aggregated
    _judged(run, config_cases, {j: "gold" for j in JUDGES})
    assert c_min_judge_accuracy({**cond, "min_items": 9}, run, {}, None).status == SKIP
    check = c_min_judge_accuracy({**cond, "min_items": 9, "if_missing": "fail"}, run, {}, None)
    assert check.status == FAIL and "at least 9 fixed items per choice (the fewest has 8)" in check.detail
    assert c_min_judge_accuracy({**cond, "question": HUB}, run, {}, None).status == PASS
    assert c_min_judge_accuracy({**cond, "question": "answer_clarity"}, run, {}, None).status == SKIP


@pytest.mark.parametrize("form", ["older", "none"])
def test_a_round_graded_before_fixed_items_is_no_grading(run, config_cases, form):
    _judged(run, config_cases, {j: "gold" for j in JUDGES})
    path = run / "judging" / "r1" / "aggregate.json"
    data = json.loads(path.read_text())
    data["calibration"] = {"version": 1, "n": 4, "judges": {}, "majority": {}} if form == "older" else None
    path.write_text(json.dumps(data))
    cond = {"id": "judges_accurate", "kind": "min_judge_accuracy", "value": 0.8, "if_missing": "fail"}
    check = c_min_judge_accuracy(cond, run, {}, None)
    assert check.status == FAIL and "a graded round (fixed calibration items" in check.detail
