"""The fault table and its parser; the seeded flake."""
from __future__ import annotations

from decimal import Decimal

import pytest
from obai_demo import faults, flake

REQUIRED = {
    "drop_skill": "routing.skill_missing",
    "extra_skill": "routing.skill_overload",
    "skip_specialist": "routing.specialist_missing",
    "reorder_specialists": "routing.sequence_violation",
    "extra_specialist": "routing.unexpected_specialist",
    "paraphrase_threshold": "routing.hub_paraphrase",
    "span_error": "trace.error_span:<specialist>",
    "empty_payload": "specialist.<name>.empty",
    "tool_error": "specialist.<name>.tool_error",
    "broken_contract": "specialist.strategy.contract_broken",
    "zero_trades": "specialist.strategy.zero_trades",
    "no_job_id": "specialist.strategy.async_stub_broken",
    "lost_job": "specialist.strategy.async_followup_missing",
    "no_slug": "specialist.prediction.no_slug",
    "wrong_option_math": "specialist.options.math",
    "empty_answer": "hub.empty_response",
    "ungrounded_number": "hub.unverified_number:987.65",
    "leaky_guardrail": "guardrail.leaky",
    "leaky_response": "guardrail.leaky_response",
    "wrong_exit_code": "guardrail.exit_code",
    "overblock": "guardrail.false_refusal",
    "hang": "(timeout)",
    "no_trace": "(trace_not_found)",
    "duplicate_trace": "(multi_match)",
    "crash": "trace.error_span:hub",
}


def test_table_is_complete():
    assert {name: f.code for name, f in faults.FAULTS.items()} == REQUIRED
    for fault in faults.FAULTS.values():
        assert fault.description and fault.example


def test_parse_and_scope():
    entries = faults.parse(" drop_skill , crash@banana ,no_slug@Fed Cuts")
    assert entries == (faults.FaultEntry("drop_skill"), faults.FaultEntry("crash", "banana"),
                       faults.FaultEntry("no_slug", "Fed Cuts"))
    assert faults.active(entries, "Will the fed cuts come?") == {"drop_skill", "no_slug"}
    assert faults.active(entries, "BANANA bread") == {"drop_skill", "crash"}
    assert faults.parse("") == () and faults.parse(None) == ()


@pytest.mark.parametrize("value", ["nope", "crash@", "drop_skill,typo"])
def test_parse_refuses_bad_entries(value):
    with pytest.raises(ValueError):
        faults.parse(value)


def test_flake_parse():
    assert flake.parse("7") == flake.FlakeConfig("7", 0.3)
    assert flake.parse("abc:0.5") == flake.FlakeConfig("abc", 0.5)
    assert flake.parse("") is None
    for bad in (":0.5", "s:x", "s:1.5"):
        with pytest.raises(ValueError):
            flake.parse(bad)


def test_flake_is_deterministic_and_varies_across_tags():
    config = flake.FlakeConfig("42", 0.5)
    decisions = [flake.decide(config, "What is AAPL's price?", f"tag-{i}") for i in range(200)]
    assert decisions == [flake.decide(config, "What is AAPL's price?", f"tag-{i}") for i in range(200)]
    hit = [d for d in decisions if d is not None]
    assert 70 <= len(hit) <= 130  # about half at rate 0.5
    assert {d.kind for d in hit} == set(flake.KINDS)
    assert flake.decide(flake.FlakeConfig("42", 0.0), "q", "t") is None
    assert flake.decide(flake.FlakeConfig("42", 1.0), "q", "t") is not None
    assert flake.decide(None, "q", "t") is None


def test_flake_number_avoids_taken_values():
    deviation = flake.Deviation("extra_number", 12345)
    first = deviation.number(set())
    assert first == "223.45"
    assert deviation.number({Decimal(first)}) != first
