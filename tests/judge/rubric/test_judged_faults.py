"""The faults only a judge can see, on their recorded units.

Each judged-fault case of the default suite (JC1-JC4: part of the ask left out; JF1-JF4: a
statement its payloads contradict) runs one fault of the demo's JUDGED_FAULTS through its
env. The recorded unit passes every mechanical rule, trips no code, and hands the judgment
questions on to the judge; so does every clean unit with an answer to judge. Only the
answer's coverage of the ask, or its agreement with the payloads, tells the two apart.
"""
from __future__ import annotations

import pytest
from obai_demo.faults import JUDGED_FAULTS
from recorded import CLEAN, case, cases, checked, clean_unit, clean_units, packet, statuses, traces, tripped

COMPLETENESS, FAITHFULNESS = "hub.incomplete_answer", "hub.unfaithful_answer"
COMPLETENESS_FAULTS = ("JC1", "JC2", "JC3", "JC4")
FAITHFULNESS_FAULTS = ("JF1", "JF2", "JF3", "JF4")
JUDGED = COMPLETENESS_FAULTS + FAITHFULNESS_FAULTS


def test_every_judged_fault_has_a_recorded_unit_of_its_question():
    faults = {c: case(c).env["OBAI_DEMO_FAULTS"] for c in JUDGED}
    assert set(faults.values()) == set(JUDGED_FAULTS)
    assert {JUDGED_FAULTS[faults[c]].code for c in COMPLETENESS_FAULTS} == {COMPLETENESS}
    assert {JUDGED_FAULTS[faults[c]].code for c in FAITHFULNESS_FAULTS} == {FAITHFULNESS}


@pytest.mark.parametrize("case_id", JUDGED)
def test_a_judged_fault_passes_every_mechanical_rule_and_is_asked_both_questions(case_id):
    unit = clean_unit(case_id)
    fault = case(case_id).env["OBAI_DEMO_FAULTS"]
    (recorded,) = traces(CLEAN, unit)
    assert recorded["trace"]["metadata"]["faults"] == [fault]
    result = checked(CLEAN, unit)
    assert tripped(result) == set(), result.reasons
    seen = statuses(result)
    assert seen.pop(COMPLETENESS) == "needs_judgment"
    assert seen.pop(FAITHFULNESS) == "needs_judgment"  # every one of them answers from payloads
    assert set(seen.values()) <= {"pass", "skipped"}, seen


def _asked(c) -> bool:
    """Whether the rubric hands the completeness question on for an answered unit of case ``c``."""
    return not c.disabled and not c.expect_rejection and (not c.adversarial or c.attack == "injection")


def test_every_case_the_questions_go_to_carries_its_expectation():
    every = cases().cases
    completeness = {c.id: c.expected_judgment.get(COMPLETENESS) for c in every if c.expected_judgment}
    assert completeness == {c.id: ("incomplete" if c.id in COMPLETENESS_FAULTS else "complete")
                            for c in every if _asked(c)}
    faithfulness = {c.id: c.expected_judgment[FAITHFULNESS] for c in every if FAITHFULNESS in c.expected_judgment}
    assert {k for k, v in faithfulness.items() if v == "unfaithful"} == set(FAITHFULNESS_FAULTS)
    # JC2 cites another year's market as the one asked about: whether "the closest" contradicts its
    # payload is a matter of reading, so it carries no faithfulness expectation.
    assert set(completeness) - set(faithfulness) == {"G1", "G2", "JC2"}  # G1, G2: no payload to be faithful to


@pytest.mark.parametrize("unit", clean_units())
def test_each_question_is_asked_exactly_where_an_answer_can_be_judged_on_it(unit):
    result = checked(CLEAN, unit)
    c = case(unit.split(".")[0])
    seen = statuses(result)
    assert (seen.get(COMPLETENESS) == "needs_judgment") == _asked(c), (unit, seen.get(COMPLETENESS))
    digests = [d for d in (packet(CLEAN, unit).trace.digest, ) if d is not None]
    has_payloads = any(call.output_text.strip() for d in digests for call in d.specialist_calls)
    assert (seen.get(FAITHFULNESS) == "needs_judgment") == (_asked(c) and has_payloads), (unit, seen.get(FAITHFULNESS))
    if c.expected_judgment.get(FAITHFULNESS):
        assert seen.get(FAITHFULNESS) == "needs_judgment", unit
