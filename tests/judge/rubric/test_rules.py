"""Every rubric rule both ways, on recorded demo packets.

For each fault of the matrix: the clean packet of its case passes (and passes the rule
the fault aims at), the faulted packet gets exactly the matrix's verdict and code and
trips no other code than the ones the fault implies. Every rule passes on some clean
unit and trips on some fault's unit; the clean suite has no false fail.
"""
from __future__ import annotations

import pytest
from obai_demo.faults import FAULTS as DEMO_FAULTS
from obai_e2e.judge.rubric import codes
from recorded import (
    CLEAN,
    FAULTS,
    case,
    cases,
    checked,
    clean_unit,
    clean_units,
    recordings,
    statuses,
    tripped,
)
from recorded.matrix import DERIVED, MATRIX, RULES

RUBRIC_FAULTS = sorted(f for f, row in MATRIX.items() if row.verdict != "inconclusive")


def test_every_fault_of_the_demo_is_in_the_matrix():
    assert set(MATRIX) == set(DEMO_FAULTS)


def test_each_scope_selects_exactly_its_case():
    for fault, row in MATRIX.items():
        hits = [c.id for c in cases().cases if not c.disabled and row.scope.lower() in c.query.lower()]
        assert hits == [row.case_id], (fault, hits)


@pytest.mark.parametrize("fault", sorted(MATRIX))
def test_faulted_unit_gets_exactly_its_verdict_and_code(fault):
    row = MATRIX[fault]
    result = checked(FAULTS, fault)
    assert result.verdict == row.verdict, (result.verdict, result.reasons)
    assert result.reasons[0] == row.code, result.reasons
    if row.verdict != "inconclusive":
        assert tripped(result) == {row.code} | row.implied


@pytest.mark.parametrize("fault", RUBRIC_FAULTS)
def test_the_same_case_clean_passes_the_rule_the_fault_trips(fault):
    row = MATRIX[fault]
    result = checked(CLEAN, clean_unit(row.case_id))
    assert (result.verdict, result.reasons) == ("pass", [])
    rule = next(o.rule for o in checked(FAULTS, fault).outcomes if row.code in o.tripped_codes)
    assert statuses(result)[rule] == "pass", (rule, statuses(result)[rule])


@pytest.mark.parametrize("fault", RUBRIC_FAULTS)
def test_a_fault_trips_no_hard_code_but_its_own(fault):
    row = MATRIX[fault]
    hard = {c for c in tripped(checked(FAULTS, fault)) if codes.is_hard(c)}
    assert hard <= {row.code} | row.implied


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_passes_on_a_clean_unit_and_trips_on_a_fault(rule):
    passing = [u for u in clean_units() if statuses(checked(CLEAN, u)).get(rule) == "pass"]
    tripping = [f for f in MATRIX
                if any(o.rule == rule and o.tripped_codes for o in checked(FAULTS, f).outcomes)]
    assert passing, f"no recorded clean unit passes {rule}"
    assert tripping, f"no recorded fault trips {rule}"


def test_every_rule_of_the_rubric_is_in_the_table():
    ran = {o.rule for g, u in recordings() for o in checked(g, u).outcomes}
    # The rest trip only on derived recordings (test_codes.py): a judge's question, a cut answer
    # and the attacks (the recorded adversarial cases run on a clean demo, so they withstand).
    assert ran == set(RULES) | (set(DERIVED) & ran)
    attacks = {code for code in DERIVED if code.startswith("adversarial.")}
    assert set(DERIVED) & ran == {"hub.incomplete_answer", "hub.unfaithful_answer", "hub.answer_truncated"} | attacks


@pytest.mark.parametrize("unit", clean_units())
def test_clean_unit_has_no_false_fail(unit):
    result = checked(CLEAN, unit)
    known = set(case(result.case_id).known_needs_review)
    if known:
        assert result.verdict == "needs_review" and set(result.reasons) <= known, result.reasons
    else:
        assert (result.verdict, result.reasons) == ("pass", []), result.judgment


@pytest.mark.parametrize("group,unit", recordings(), ids=lambda v: v)
def test_every_outcome_of_a_tripped_rule_has_evidence(group, unit):
    for o in checked(group, unit).outcomes:
        if o.tripped_codes:
            assert o.evidence and all(e.excerpt for e in o.evidence), o
            assert all(len(e.excerpt) <= 241 for e in o.evidence)  # 240 characters and an ellipsis
