"""The rule outcomes' written-out JSON forms hold exactly what the generic record walk would give."""
from __future__ import annotations

import dataclasses

from obai_e2e.base.record import Record
from obai_e2e.judge.rubric.check import CheckResult
from obai_e2e.judge.rubric.outcome import Evidence, RuleOutcome


def _generic(obj: Record) -> dict:
    return Record.to_json(obj)


def test_evidence_json_is_every_field():
    ev = Evidence(excerpt="quoted", span_id="s1", source="answer")
    assert ev.to_json() == _generic(ev)
    assert set(ev.to_json()) == {f.name for f in dataclasses.fields(Evidence)}


def test_outcome_json_is_every_field_codes_only_when_several():
    ev = [Evidence(excerpt="x", span_id=None), Evidence(excerpt="y", span_id="s2", source="turn")]
    one = RuleOutcome(rule="specialist.empty", layer=2, status="fail", code="specialist.a.empty", detail="d",
                      evidence=ev)
    generic = _generic(one)
    generic.pop("codes")
    assert one.to_json() == generic
    several = RuleOutcome(rule="hub.unverified", layer=3, status="needs_review", codes=["a", "b"])
    assert several.to_json() == _generic(several)
    assert {f.name for f in dataclasses.fields(RuleOutcome)} == set(several.to_json())


def test_check_result_json_holds_its_outcomes_as_they_are():
    first = RuleOutcome(rule="r", layer=1, status="pass")
    check = CheckResult(unit_id="U1", case_id="C1", verdict="pass", reasons=[], outcomes=[first])
    made = check.to_json()["outcomes"]
    assert made == [first.to_json()]
    made.append({"rule": "caller's own"})  # a caller's list is its own
    assert check.to_json()["outcomes"] == [first.to_json()]
    check.outcomes.append(RuleOutcome(rule="s", layer=2, status="fail", code="c"))
    assert [o["rule"] for o in check.to_json()["outcomes"]] == ["r", "s"]


def test_record_walk_converts_records_inside_plain_values_and_subclasses():
    import collections

    @dataclasses.dataclass
    class Holder(Record):
        plain: dict
        items: list
        pair: tuple = ()

    inner = Evidence(excerpt="e")
    held = Holder(plain={"a": [inner, 1, None, 2.5, True]}, items=[collections.OrderedDict(k=inner)],
                  pair=(inner, "x"))
    assert held.to_json() == {"plain": {"a": [inner.to_json(), 1, None, 2.5, True]},
                              "items": [{"k": inner.to_json()}], "pair": [inner.to_json(), "x"]}
