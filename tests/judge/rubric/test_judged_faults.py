"""The faults only a judge can see, on their recorded calibration units.

Each calibration case of the default suite (CAL1-CAL4) runs one fault of the demo's
JUDGED_FAULTS through its env. The recorded unit passes every mechanical rule, trips no
code, and hands the judgment question hub.incomplete_answer on to the judge; so does every
clean unit with an answer to judge, which is what makes the calibration set a fair test of
a panel: only the answer's coverage of the ask tells the two apart.
"""
from __future__ import annotations

import pytest
from obai_demo.faults import JUDGED_FAULTS
from recorded import CLEAN, case, cases, checked, clean_unit, clean_units, statuses, traces, tripped

QUESTION = "hub.incomplete_answer"
CALIBRATION = ("CAL1", "CAL2", "CAL3", "CAL4")


def test_every_judged_fault_has_a_recorded_calibration_unit():
    faults = {case(c).env["OBAI_DEMO_FAULTS"] for c in CALIBRATION}
    assert faults == set(JUDGED_FAULTS)


@pytest.mark.parametrize("case_id", CALIBRATION)
def test_a_judged_fault_passes_every_mechanical_rule_and_is_asked(case_id):
    unit = clean_unit(case_id)
    fault = case(case_id).env["OBAI_DEMO_FAULTS"]
    (recorded,) = traces(CLEAN, unit)
    assert recorded["trace"]["metadata"]["faults"] == [fault]
    result = checked(CLEAN, unit)
    assert tripped(result) == set(), result.reasons
    seen = statuses(result)
    assert seen.pop(QUESTION) == "needs_judgment"
    assert set(seen.values()) <= {"pass", "skipped"}, seen


def _asked(c) -> bool:
    """Whether the rubric hands hub.incomplete_answer on for an answered unit of case ``c``."""
    return not c.disabled and not c.expect_rejection and (not c.adversarial or c.attack == "injection")


def test_every_case_the_question_goes_to_carries_its_gold_answer():
    every = cases().cases
    labelled = {c.id: c.judge_gold.get(QUESTION) for c in every if c.judge_gold}
    assert labelled == {c.id: ("incomplete" if c.id in CALIBRATION else "complete") for c in every if _asked(c)}


@pytest.mark.parametrize("unit", [u for u in clean_units() if not u.startswith("CAL")])
def test_the_question_is_asked_exactly_where_the_gold_answer_is_complete(unit):
    result = checked(CLEAN, unit)
    gold = case(unit.split(".")[0]).judge_gold.get(QUESTION)
    assert (statuses(result).get(QUESTION) == "needs_judgment") == (gold == "complete"), (unit, gold)
