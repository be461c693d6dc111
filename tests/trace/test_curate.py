"""Curation on recorded demo traces: the judge's text, its sections and the digest.

The recorded packet holds what curation made of the trace when the unit was driven, so
curating the recorded trace again must give the same bytes; the order spans arrive in
must not matter; each digest field is what the raw spans say.
"""
from __future__ import annotations

import random
import re

import pytest
from obai_e2e.trace.curate import curate
from obai_e2e.trace.digest import TraceDigest
from obai_e2e.trace.values import MAX_VALUE_CHARS, cut, dig, envelope
from recorded import config, packet, raw, recordings, traces

VOCAB = config().vocabulary

# (group, unit, role) of every recorded trace that a packet curated.
CURATED = [(g, u, t["role"]) for g, u in recordings() for t in traces(g, u)
           if t["role"] in ("turn", "followup")]


def _block(group: str, unit: str, role: str):
    p = packet(group, unit)
    return p.trace if role == "turn" else p.followup.trace


def _id(value):
    return "/".join(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("group,unit,role", CURATED, ids=lambda v: v)
def test_curating_the_recorded_trace_again_gives_the_packets_bytes(group, unit, role):
    trace, spans = raw(group, unit, role)
    block = _block(group, unit, role)
    curated = curate(trace, spans, VOCAB, complete=block.complete is not False)  # an open span is marked
    assert curated.text == block.curated
    assert curated.digest.to_json() == block.digest.to_json()


@pytest.mark.parametrize("group,unit,role", CURATED[::5], ids=lambda v: v)
def test_span_order_and_repetition_do_not_change_the_bytes(group, unit, role):
    trace, spans = raw(group, unit, role)
    first = curate(trace, spans, VOCAB)
    for seed in range(3):
        shuffled = spans[:]
        random.Random(seed).shuffle(shuffled)
        again = curate(trace, shuffled, VOCAB)
        assert again.text == first.text and again.digest == first.digest


SECTIONS = [r"TRACE \S+  name=hub", r"START \S+  DURATION \d+ ms  SPANS \d+", r"QUERY:", r"GUARDRAIL:",
            r"SKILL LOADS:", r"SPECIALIST CALLS \(start order\):", r"HUB-TO-STRATEGY INPUT:", r"ERROR SPANS:",
            r"FINAL RESPONSE:"]


@pytest.mark.parametrize("group,unit,role", CURATED, ids=lambda v: v)
def test_named_sections_in_order_with_one_block_per_called_specialist(group, unit, role):
    text = _block(group, unit, role).curated
    heads = [line for line in text.splitlines() if line and not line.startswith(" ")]
    fixed = [h for h in heads if not h.endswith(" CALLS")]
    assert [next(p for p in SECTIONS if re.fullmatch(p + ".*", h)) for h in fixed] == SECTIONS
    digest = _block(group, unit, role).digest
    called = list(dict.fromkeys(c.name for c in digest.specialist_calls))
    assert [h for h in heads if h.endswith(" CALLS")] == [f"{n.upper()} CALLS" for n in called]
    for c in digest.specialist_calls:
        assert f"span {c.span_id}" in text


def _spans_named(spans, name):
    return sorted((s for s in spans if s["name"] == name), key=lambda s: (s["start_time"], s["id"]))


@pytest.mark.parametrize("group,unit,role", CURATED, ids=lambda v: v)
def test_digest_fields_are_what_the_spans_say(group, unit, role):
    trace, spans = raw(group, unit, role)
    d = curate(trace, spans, VOCAB).digest
    assert d.trace_id == trace["id"] and d.thread_id == trace["thread_id"]
    assert d.tags == sorted(trace["tags"]) and d.complete
    assert len(d.spans) == len(spans)
    offsets = [s.offset_ms for s in d.spans]
    assert offsets == sorted(offsets) and offsets[0] >= 0
    loads = _spans_named(spans, VOCAB.skill_load_span)
    assert [s.skill for s in d.skill_loads] == [dig(s, VOCAB.skill_name_field) for s in loads]
    specialists = sorted((s for s in spans if s["name"] in VOCAB.specialists), key=lambda s: (s["start_time"], s["id"]))
    assert [(c.name, c.span_id) for c in d.specialist_calls] == [(s["name"], s["id"]) for s in specialists]
    guard = _spans_named(spans, VOCAB.guardrail_span)
    if guard:
        assert d.guardrail.span_id == guard[0]["id"]
        assert d.guardrail.refused is (dig(guard[0], VOCAB.guardrail_allowed_field) is False)
    else:
        assert d.guardrail is None
    strategy = _spans_named(spans, VOCAB.strategy_specialist)
    wanted = dig(strategy[0], VOCAB.strategy_input_field) if strategy else None
    assert (d.strategy_input.text if d.strategy_input else None) == wanted
    assert [e.span_id for e in d.error_spans] == [s["id"] for s in sorted(spans, key=lambda s: (s["start_time"], s["id"]))
                                                  if s.get("error_info")]
    assert d.trace_error is bool(trace.get("error_info"))
    assert d.final_response == dig(trace, VOCAB.final_response_field)


@pytest.mark.parametrize("group,unit", [("clean", "MD1"), ("clean", "R1"), ("faults", "crash")], ids=_id)
def test_the_final_response_is_the_cli_answer(group, unit):
    p = packet(group, unit)
    assert (p.trace.digest.final_response or "").strip() == p.answer


def test_a_digest_reads_and_writes_back_as_it_was():
    for g, u in recordings():
        p = packet(g, u)
        if p.trace.digest is not None:
            data = p.trace.digest.to_json()
            assert TraceDigest.from_json(data).to_json() == data


def test_an_unfinished_trace_is_marked_in_the_text_and_the_digest():
    trace, spans = raw("clean", "MD1")
    curated = curate(trace, spans, VOCAB, complete=False)
    assert "(INCOMPLETE: some spans had not ended)" in curated.text.splitlines()[1]
    assert curated.digest.complete is False


def test_long_values_are_cut_with_a_visible_marker():
    trace, spans = raw("clean", "MD1")
    call = next(s for s in spans if s["name"] in VOCAB.specialists)
    call["output"] = {"content": [{"type": "text", "text": "x" * (MAX_VALUE_CHARS + 123)}]}
    text = curate(trace, spans, VOCAB).text
    assert "x" * MAX_VALUE_CHARS + " … [cut: 123 more chars]" in text
    assert cut("short") == "short"


def test_a_span_that_raised_is_listed_with_its_exception():
    trace, spans = raw("faults", "span_error")
    d = curate(trace, spans, VOCAB)
    (error,) = d.digest.error_spans
    assert error.name == "fundamentals_analysis" and error.exception_type
    assert f"- fundamentals_analysis  span {error.span_id}  {error.exception_type}: " in d.text
    call = next(c for c in d.digest.specialist_calls if c.span_id == error.span_id)
    assert call.has_error_info
    assert f"span {call.span_id}  +{call.offset_ms} ms  (" in d.text and "error_info set)" in d.text


def test_a_refusal_shows_no_specialist_and_no_skill():
    trace, spans = raw("clean", "R1")
    d = curate(trace, spans, VOCAB)
    assert d.digest.guardrail.refused and not d.digest.specialist_calls and not d.digest.skill_loads
    assert "GUARDRAIL: refused" in d.text
    assert "SKILL LOADS:\n    (none)" in d.text and "SPECIALIST CALLS (start order):\n    (none)" in d.text


def test_without_a_guardrail_span_the_text_says_so():
    trace, spans = raw("clean", "MD1")
    d = curate(trace, [s for s in spans if s["name"] != VOCAB.guardrail_span], VOCAB)
    assert d.digest.guardrail is None and "GUARDRAIL:\n    (no guardrail span)" in d.text


# Tool outputs as the SDK stores them: (output, text, is_error, empty, structured).
ENVELOPES = [
    ({"content": [{"type": "text", "text": "Last close: 1"}]}, "Last close: 1", False, False, False),
    ({"output": "plain text"}, "plain text", False, False, False),
    ({"output": {"content": [{"type": "text", "text": "wrapped"}]}}, "wrapped", False, False, False),
    ({"isError": True, "content": [{"type": "text", "text": "upstream timeout"}]}, "upstream timeout", True, False, False),
    ({"content": [{"type": "error", "error": {"code": 504}}]}, "", True, True, False),
    ({"error": {"message": "boom"}}, "", True, True, False),
    ({"content": [], "structuredContent": {"price": 1}}, "", False, False, True),
    ({"content": [{"type": "text", "text": "  "}]}, "  ", False, True, False),
    ({"content": []}, "", False, True, False),
    (None, "", False, True, False),
    ({"price": 1.5}, '{"price": 1.5}', False, False, False),
]


@pytest.mark.parametrize("output,text,is_error,empty,structured", ENVELOPES)
def test_tool_output_envelopes(output, text, is_error, empty, structured):
    env = envelope(output)
    assert (env["text"], env["is_error"], env["empty"], env["structured"]) == (text, is_error, empty, structured)
    if is_error:
        assert env["error_text"]


def test_start_time_orders_the_spans_not_their_ids():
    """Recorded ids happen to follow start times; given ids in the opposite order the text keeps start order."""
    trace, spans = raw("clean", "M7")
    first = curate(trace, spans, VOCAB)
    assert len({c.name for c in first.digest.specialist_calls}) >= 3
    by_start = sorted(spans, key=lambda s: (s["start_time"], s["id"]))
    renamed = {s["id"]: f"{len(spans) - i:08x}-0000-7000-8000-ffffffffffff" for i, s in enumerate(by_start)}
    for s in spans:
        s["id"] = renamed[s["id"]]
        if s.get("parent_span_id") in renamed:
            s["parent_span_id"] = renamed[s["parent_span_id"]]
    again = curate(trace, spans, VOCAB).digest
    assert [c.name for c in again.specialist_calls] == [c.name for c in first.digest.specialist_calls]
    assert [s.name for s in again.spans] == [s.name for s in first.digest.spans]
