"""The context-dependent response contract and its one audited repair."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from obai_e2e.base.errors import VerdictInvalid
from obai_e2e.judge.panel import schema
from obai_e2e.judge.panel.responses import store

from .helpers import entry, pid_of

FIXTURES = Path(__file__).parent / "fixtures"


def refusal(e, packet) -> VerdictInvalid:
    with pytest.raises(VerdictInvalid) as info:
        schema.validate_entry(e, packet)
    return info.value


def test_non_applicable_choice_is_repaired_and_audited(na_round):
    run, rnd = na_round
    pid = pid_of(rnd, "R1")
    packet = rnd.packets[pid]
    e = entry(rnd, "R1", None)
    e["answers"][2]["choice"] = "fails"  # a rating for a question that does not apply (the category question)
    e["answers"][2]["rationale"] = "The refusal does not state figures."
    accepted = schema.validate_entry(e, packet)
    assert accepted.value["answers"][2]["choice"] is None
    assert accepted.value["answers"][2]["rationale"] == "The refusal does not state figures."  # the rest unchanged
    assert accepted.repair == {"rule": "non_applicable_rating:/answers/<i>/choice", "original": e,
                               "pointers": ["/answers/2/choice"]}
    assert e["answers"][2]["choice"] == "fails"  # the original is kept as it came
    # Stored with the response: original and rule id next to the raw text.
    raw = json.dumps({"packets": [e]})
    out = store(run, "r1", "J1", "test-model", raw)
    assert out["repaired"] == 1 and out["refused"] == 0
    rec = json.loads((rnd.dir / "responses" / "J1.json").read_text())
    assert rec["raw"] == raw
    stored = rec["validation"]["packets"][pid]
    assert stored["status"] == "repaired"
    assert stored["repair"]["rule"] == "non_applicable_rating:/answers/<i>/choice"
    assert stored["repair"]["original"]["answers"][2]["choice"] == "fails"
    assert "does not apply" in stored["problems_before"][0]


def test_repair_twice_is_once(na_round):
    _, rnd = na_round
    packet = rnd.packets[pid_of(rnd, "R1")]
    e = entry(rnd, "R1", None)
    e["answers"][0]["choice"] = "complete"
    once = schema.validate_entry(e, packet)
    twice = schema.validate_entry(once.value, packet)
    assert once.repair and twice.repair is None and twice.value == once.value
    ctx = schema.Context.of(packet)
    rule = schema.REPAIRS[0]
    assert rule.run(rule.run(copy.deepcopy(e), ctx), ctx) == rule.run(copy.deepcopy(e), ctx)


def test_repair_is_narrow(na_round):
    _, rnd = na_round
    packet = rnd.packets[pid_of(rnd, "R1")]
    # Anything else wrong in the same answer: no repair, refused at the first problem.
    e = entry(rnd, "R1", None)
    e["answers"][0]["choice"] = "complete"
    e["answers"][0]["evidence"]["spans"] = ["not-a-span"]
    exc = refusal(e, packet)
    assert exc.pointer == "/answers/0/choice" and "does not apply" in str(exc)
    # An unknown value for a non-applicable question is not a known rating: refused.
    e = entry(rnd, "R1", None)
    e["answers"][0]["choice"] = "partly"
    assert refusal(e, packet).pointer == "/answers/0/choice"
    # A missing answer stays missing: nothing is invented.
    e = entry(rnd, "R1", None)
    del e["answers"][1]
    exc = refusal(e, packet)
    assert exc.pointer == "/answers" and "no answer to question q2" in str(exc)


def test_unrepairable_answers_name_the_pointer(na_round):
    _, rnd = na_round
    pid = pid_of(rnd, "MD1")
    packet = rnd.packets[pid]
    cases = {
        "/answers/0/choice": lambda e: e["answers"][0].update(choice="mostly"),
        "/answers/0": lambda e: e["answers"][0].update(confidence=0.9),
        "/answers/3/question": lambda e: e["answers"].append(copy.deepcopy(e["answers"][1])),
        "/answers/0/evidence/spans/0": lambda e: e["answers"][0]["evidence"].update(spans=["01a2288d-dead-beef"]),
        "/answers/0/evidence/numbers/0": lambda e: e["answers"][0]["evidence"].update(numbers=["999.99"]),
        "/answers/0/evidence": lambda e: e["answers"][0]["evidence"].update(spans=[]),
        "/answers/0/rationale": lambda e: e["answers"][0].update(rationale=" "),
        "/": lambda e: e.update(note="x"),
        "/packet_id": lambda e: e.update(packet_id="0" * 16),
    }
    for pointer, spoil in cases.items():
        e = entry(rnd, "MD1", "complete")
        spoil(e)
        exc = refusal(e, packet)
        assert exc.pointer == pointer, (pointer, str(exc))
        assert str(exc).startswith(f"packet {pid} {pointer}: ")
    assert "does not exist in this packet" in str(refusal(
        {**entry(rnd, "MD1", "complete"), "answers": [{**entry(rnd, "MD1", "complete")["answers"][0],
                                                       "evidence": {"spans": ["nope"], "numbers": []}},
                                                      *entry(rnd, "MD1", "complete")["answers"][1:]]}, packet))
    # Numbers are compared normalised: "238.410" and "$238.41" are the packet's 238.41.
    e = entry(rnd, "MD1", "incomplete")
    e["answers"][0]["evidence"] = {"spans": [], "numbers": ["238.410", "62,336,968", "0.92%"]}
    assert schema.validate_entry(e, packet).repair is None


def test_old_context_without_schema_version_stays_valid():
    old_context = json.loads((FIXTURES / "old_context.json").read_text())
    old_response = json.loads((FIXTURES / "old_response.json").read_text())
    assert "response_schema_version" not in old_context
    assert schema.context_version(old_context) == schema.LEGACY_VERSION
    accepted = schema.validate_entry(old_response, old_context)
    assert accepted.value == old_response and accepted.repair is None  # valid as it was
    # The same answer under today's rules would need evidence and a rationale.
    current = {**old_context, "response_schema_version": 1}
    assert refusal(old_response, current).pointer == "/answers/0"
    # The older rules admitted null for any question; membership still holds for old contexts.
    assert schema.validate_entry({**old_response, "answers": [{"question": "q1", "choice": None}]}, old_context)
    bad = {**old_response, "answers": [{"question": "q1", "choice": "complete",
                                        "evidence": {"spans": ["01a2288d-0000"], "numbers": []}}]}
    assert refusal(bad, old_context).pointer == "/answers/0/evidence/spans/0"
    # The stored context itself is never rewritten.
    assert json.loads((FIXTURES / "old_context.json").read_text()) == old_context
    with pytest.raises(VerdictInvalid, match="response_schema_version"):
        schema.validate_entry(old_response, {**old_context, "response_schema_version": 7})
