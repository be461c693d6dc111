"""Majority, no-votes, agreement and rater variance over a round of synthetic judge replies."""
from __future__ import annotations

import json

import pytest
from obai_e2e.base.errors import UsageError, WriteOnceViolation
from obai_e2e.judge.panel import panel_for_unit
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.responses import store

from .helpers import entry, make_round, pid_of, reply

UNITS = ("A1", "MD1", "O2", "S2")
# The worked example of test_agreement, one item per unit (units in sorted order):
#   A1 c c c (unanimous) · MD1 c c i (2 vs 1) · O2 i i i · S2 c i a (three-way split)
PANEL = {
    "J1": {"A1": "complete", "MD1": "complete", "O2": "incomplete", "S2": "complete"},
    "J2": {"A1": "complete", "MD1": "complete", "O2": "incomplete", "S2": "incomplete"},
    "J3": {"A1": "complete", "MD1": "incomplete", "O2": "incomplete", "S2": "abstain"},
}
CODE, FAITH = "hub.incomplete_answer", "hub.unfaithful_answer"


@pytest.fixture
def rnd(run, config_cases):
    """A round of the four answered units alone (no fixed calibration items: test_calibration.py has them).
    Each judge calls every answer faithful (abstaining where it abstains on completeness)."""
    return make_round(run, *config_cases, calibration=False)


def store_panel(run, rnd, panel=PANEL):
    for judge, choices in panel.items():
        store(run, "r1", judge, f"model-{judge}", reply(rnd, choices, tag=judge))


def test_majority_unanimous_two_to_one_and_split(run, rnd):
    store_panel(run, rnd)
    out = aggregate_round(run, "r1")
    # decided: completeness on A1, MD1, O2 and faithfulness on all four (S2: faithful 2 of 3)
    assert out["status"] == "created" and out["decided"] == 7 and out["trips"] == ["O2:hub.incomplete_answer"]
    agg = json.loads((rnd.dir / "aggregate.json").read_text())
    q = {u: agg["units"][u]["questions"][CODE] for u in UNITS}
    assert (q["A1"]["majority"], q["A1"]["decided"], q["A1"]["ratings"]) == ("complete", True, [0, 0, 0])
    assert (q["MD1"]["majority"], q["MD1"]["votes"]) == ("complete", {"complete": 2, "incomplete": 1})
    assert q["MD1"]["ratings"] == [0, 0, 1]
    assert (q["O2"]["majority"], q["O2"]["trips"], q["O2"]["majority_loss"]) == ("incomplete", True, 1)
    assert (q["S2"]["majority"], q["S2"]["decided"]) == ("abstain", False)
    assert q["S2"]["ratings"] == [0, 1, None]  # abstain is no loss, not 0
    assert q["S2"]["choices"] == {"J1": "complete", "J2": "incomplete", "J3": "abstain"}
    assert [e["judge"] for e in q["S2"]["evidence"]] == ["J1", "J2"]
    assert [r["judge"] for r in q["S2"]["rationale"]] == ["J1", "J2", "J3"]
    # Agreement on completeness: the worked example, P̄ = 7/12, κ = 11/41.
    hub = agg["agreement"]["by_question"][CODE]
    assert hub["items"] == 4 and hub["raters"] == 3
    assert hub["exact"] == {"percent_agreement": "7/12", "chance_agreement": "31/72", "fleiss_kappa": "11/41"}
    assert hub["fleiss_kappa"] == pytest.approx(11 / 41)
    # Over both questions (faithfulness: f f f three times, f f a once): P̄ = 17/24, P̄e = 31/96, κ = 37/65.
    overall = agg["agreement"]["overall"]
    assert overall["items"] == 8 and overall["raters"] == 3
    assert overall["exact"] == {"percent_agreement": "17/24", "chance_agreement": "31/96", "fleiss_kappa": "37/65"}
    # Rater variance: per-unit sample variances 0, 1/3, 0, 1/2 → mean 5/24; pairs by hand.
    rv = agg["rater_variance"][CODE]
    assert (rv["exact"], rv["m"], rv["raters"]) == ("5/24", 4, 3)
    assert rv["pairs"] == {"J1|J2": {"sigma_r2": 1 / 8, "m": 4}, "J1|J3": {"sigma_r2": 1 / 6, "m": 3},
                           "J2|J3": {"sigma_r2": 1 / 6, "m": 3}}
    # Per-judge figures.
    f = agg["judge_figures"]
    assert f["J1"]["valid_share"] == 1.0 and f["J1"]["agreement_with_majority"] == 1.0
    assert f["J3"]["agreement_with_majority"] == pytest.approx(5 / 7) and f["J3"]["abstain_rate"] == 0.25
    assert f["J2"]["model"] == "model-J2" and f["J2"]["majority_items"] == 7


def test_panel_for_unit_reads_the_latest_aggregated_round(run, rnd, config_cases):
    assert panel_for_unit(run, "MD1") is None
    store_panel(run, rnd)
    aggregate_round(run, "r1")
    panel = panel_for_unit(run, "MD1")
    assert panel["round"] == "r1" and panel["judges"] == ["J1", "J2", "J3"]
    assert panel["ratings"] == {CODE: [0, 0, 1], FAITH: [0, 0, 0]}
    assert panel["majority"] == {CODE: "complete", FAITH: "faithful"}
    assert panel["models"] == {j: f"model-{j}" for j in ("J1", "J2", "J3")}
    assert panel_for_unit(run, "R1") is None
    r2 = make_round(run, *config_cases, "r2", calibration=False)
    panel2 = {j: {u: "incomplete" for u in UNITS} for j in PANEL}
    for judge, choices in panel2.items():
        store(run, "r2", judge, "m", reply(r2, choices))
    assert panel_for_unit(run, "MD1")["round"] == "r1"  # r2 not aggregated yet
    aggregate_round(run, "r2")
    assert panel_for_unit(run, "MD1")["majority"] == {CODE: "incomplete", FAITH: "faithful"}
    assert panel_for_unit(run, "MD1", "r1")["round"] == "r1"


def test_invalid_json_is_a_parse_failure_and_no_vote(run, rnd):
    out = store(run, "r1", "J1", "m", '{"packets": [ this is not json')
    assert out["parse_ok"] is False and "not valid JSON" in out["parse_error"] and out["absent"] == 4
    rec = json.loads((rnd.dir / "responses" / "J1.json").read_text())
    assert rec["raw"] == '{"packets": [ this is not json' and rec["validation"]["parse"]["ok"] is False
    store(run, "r1", "J2", "m", reply(rnd, PANEL["J2"]))
    store(run, "r1", "J3", "m", "```json\n" + reply(rnd, PANEL["J2"]) + "\n```")  # one fence is accepted
    agg_out = aggregate_round(run, "r1")
    agg = json.loads((rnd.dir / "aggregate.json").read_text())
    md1 = agg["units"]["MD1"]["questions"][CODE]
    assert md1["no_vote"] == {"J1": "parse_failed"} and md1["ratings"] == [None, 0, 0]
    assert md1["majority"] == "complete"  # 2 of N = 3
    assert agg["judge_figures"]["J1"]["valid_share"] == 0.0 and agg["judge_figures"]["J1"]["parse_ok"] is False
    assert agg["agreement"]["overall"]["items"] == 0  # no item was rated by every judge
    assert agg_out["agreement"]["fleiss_kappa"] is None
    assert agg["agreement"]["overall"]["pairs"] == {"J1|J2": {"items": 0, "percent_agreement": None},
                                                    "J1|J3": {"items": 0, "percent_agreement": None},
                                                    "J2|J3": {"items": 8, "percent_agreement": 1.0}}
    assert json.loads((rnd.dir / "responses" / "J3.json").read_text())["validation"]["parse"]["envelope"] == "fenced"


def test_two_votes_of_three_needed_when_a_judge_is_refused(run, rnd):
    # J1 cites a span that is not in the packet and a number that is not in it: both entries refused.
    bad = json.loads(reply(rnd, {"MD1": "complete", "S2": "incomplete"}))
    bad["packets"][0]["answers"][0]["evidence"]["spans"] = ["01a2288d-ffff-ffff-ffff-ffffffffffff"]
    bad["packets"][1]["answers"][0]["evidence"] = {"spans": [], "numbers": ["31.4%"]}
    out = store(run, "r1", "J1", "m", json.dumps(bad))
    assert out["refused"] == 2 and out["absent"] == 2
    md1, s2 = pid_of(rnd, "MD1"), pid_of(rnd, "S2")
    assert "span id '01a2288d-ffff-ffff-ffff-ffffffffffff' does not exist in this packet" in out["refusals"][md1]
    assert "/packets/0/answers/0/evidence/spans/0" in json.loads(
        (rnd.dir / "responses" / "J1.json").read_text())["validation"]["packets"][md1]["pointer"]
    assert "the number '31.4%' does not occur in this packet's text" in out["refusals"][s2]
    store(run, "r1", "J2", "m", reply(rnd, {"MD1": "complete", "S2": "incomplete"}))
    store(run, "r1", "J3", "m", reply(rnd, {"MD1": "incomplete", "S2": "incomplete"}))
    aggregate_round(run, "r1")
    agg = json.loads((rnd.dir / "aggregate.json").read_text())
    assert agg["units"]["MD1"]["questions"][CODE]["majority"] == "abstain"  # 1 + 1 of 3: no majority
    assert agg["units"]["MD1"]["questions"][CODE]["no_vote"] == {"J1": "refused"}
    assert agg["units"]["S2"]["questions"][CODE]["majority"] == "incomplete"
    assert agg["units"]["A1"]["questions"][CODE]["no_vote"] == {"J1": "absent", "J2": "absent", "J3": "absent"}


def test_response_and_aggregate_are_write_once(run, rnd):
    raw = reply(rnd, PANEL["J1"])
    assert store(run, "r1", "J1", "m", raw)["status"] == "stored"
    assert store(run, "r1", "J1", "m", raw)["status"] == "unchanged"
    with pytest.raises(WriteOnceViolation):
        store(run, "r1", "J1", "m", reply(rnd, PANEL["J3"]))
    with pytest.raises(UsageError, match="1 of 3"):
        aggregate_round(run, "r1")
    store(run, "r1", "J2", "m", reply(rnd, PANEL["J2"]))
    store(run, "r1", "J3", "m", reply(rnd, PANEL["J3"]))
    with pytest.raises(UsageError, match="has its 3 judges"):
        store(run, "r1", "J4", "m", raw)
    first = aggregate_round(run, "r1")
    again = aggregate_round(run, "r1")
    assert first["status"] == "created" and again["status"] == "unchanged"
    with pytest.raises(WriteOnceViolation, match="aggregated already"):
        store(run, "r1", "J9", "m", raw)


def test_structure_errors_and_unknown_or_duplicate_packets(run, rnd):
    out = store(run, "r1", "J1", "m", json.dumps({"packets": [], "comment": "hi"}))
    assert out["structure_ok"] is False and out["absent"] == 4
    e = entry(rnd, "MD1", "complete")
    out = store(run, "r1", "J2", "m", json.dumps({"packets": [e, e, {**e, "packet_id": "0" * 16}]}))
    assert out["refused"] == 1 and out["unknown_packets"] == 1
    assert "answered 2 times" in out["refusals"][pid_of(rnd, "MD1")]
