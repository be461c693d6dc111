"""A trace written after its turn: ``last_updated_at`` against the turn's end, and the digest of what was read.

On stored data: every recorded unit of the demo (its trace as the SDK read it, its turn's end) and a
trace recorded before and after a PATCH of one span (``record_patched.py``). The re-read against the
live local store, configured as kind opik with the store's own token (a key that is not scoped to a
turn, as Opik's is not), is in test_reread_live.py.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from obai_e2e.trace import freshness

from recorded import config, packet, raw, recordings, traces

PATCHED = json.loads((Path(__file__).parent / "data" / "patched_after_turn.json").read_text(encoding="utf-8"))
DEMO = config().backend
DEMO_ALLOWANCE = freshness.allowance_s(DEMO.flush_timeout_s, DEMO.clock_skew_s)


def recorded_turns():
    """(name, trace, spans, the end of the turn that wrote it) of every recorded trace that was resolved."""
    for group, unit in recordings():
        p = packet(group, unit)
        ends = {"turn": p.turn.ended_at}
        if p.followup is not None:
            ends["followup"] = p.followup.turn.ended_at
        for t in traces(group, unit):
            if t["role"] in ends:
                yield f"{group}/{unit}/{t['role']}", t["trace"], t["spans"], ends[t["role"]]


def test_no_recorded_turn_of_the_demo_wrote_its_trace_after_it_ended():
    checked = 0
    for name, trace, spans, ended in recorded_turns():
        assert freshness.late_writes(trace, spans, ended, DEMO_ALLOWANCE) == [], name
        assert freshness.late_writes(trace, spans, ended, 0.0) == [], name  # not even without an allowance
        checked += 1
    assert checked > 40


def test_a_span_patched_after_the_turn_is_named_with_its_time():
    after = PATCHED["after"]
    late = freshness.late_writes(after["trace"], after["spans"], PATCHED["turn_ended_at"], 1.0)
    assert [(w.what, w.id, w.name) for w in late] == [("span", PATCHED["patched_span"], "market_data_analysis")]
    text = freshness.describe_late(after["trace"]["id"], late, PATCHED["turn_ended_at"], 1.0)
    assert f"after its turn ended at {PATCHED['turn_ended_at']}" in text and late[0].at in text
    assert "span 'market_data_analysis'" in text and "allowed: 1 s" in text


def test_the_same_trace_read_before_the_patch_is_in_time():
    before = PATCHED["before"]
    assert freshness.late_writes(before["trace"], before["spans"], PATCHED["turn_ended_at"], 1.0) == []


def test_the_allowance_is_the_flush_plus_the_clock_skew():
    after, end = PATCHED["after"], PATCHED["turn_ended_at"]
    assert freshness.allowance_s(1, 0.5) == 1.5
    # The patch landed PATCHED["patched_after_s"] (and a little) after the end: a skew that wide hides it, a
    # narrower one does not; a backend clock that runs ahead is what the skew allowance is for.
    wide = freshness.allowance_s(1, PATCHED["patched_after_s"] + 2)
    assert freshness.late_writes(after["trace"], after["spans"], end, wide) == []
    assert freshness.late_writes(after["trace"], after["spans"], end, freshness.allowance_s(1, 0))


def test_a_trace_written_later_than_a_span_is_named_first_and_each_late_span_once():
    trace, spans = raw("clean", "MD1")
    ended = packet("clean", "MD1").turn.ended_at
    trace["last_updated_at"] = "2099-01-01T00:00:02Z"
    spans[0]["last_updated_at"], spans[1]["last_updated_at"] = "2099-01-01T00:00:01Z", "2099-01-01T00:00:00Z"
    late = freshness.late_writes(trace, spans, ended, DEMO_ALLOWANCE)
    assert [w.what for w in late] == ["trace", "span", "span"] and late[1].id == spans[1]["id"]


@pytest.mark.parametrize("value", [None, "", "not a time"])
def test_an_entity_without_a_readable_update_time_is_not_called_late(value):
    trace, spans = raw("clean", "MD1")
    trace["last_updated_at"] = value
    assert freshness.late_writes(trace, spans, packet("clean", "MD1").turn.ended_at, 0.0) == []


def test_the_digest_changes_with_the_evidence_and_only_with_it():
    before, after = PATCHED["before"], PATCHED["after"]
    first = freshness.content_sha256(before["trace"], before["spans"])
    assert freshness.content_sha256(after["trace"], after["spans"]) != first  # the patched output
    same = copy.deepcopy(before)
    same["spans"].reverse()
    for entity in [same["trace"], *same["spans"]]:  # not evidence: what the backend derives or others add later
        entity.update(last_updated_at="2099-01-01T00:00:00Z", feedback_scores=[{"name": "e2e_verdict", "value": 1}],
                      comments=[{"text": "looked at"}], duration=1.0, span_count=9, total_estimated_cost=1.0)
    assert freshness.content_sha256(same["trace"], same["spans"]) == first
    for change in ({"tags": ["forged"]}, {"metadata": {"x": 1}}, {"error_info": {"message": "x"}},
                   {"end_time": "2099-01-01T00:00:00Z"}):
        edited = copy.deepcopy(before)
        edited["spans"][0].update(change)
        assert freshness.content_sha256(edited["trace"], edited["spans"]) != first, change
    added = copy.deepcopy(before)
    added["spans"].append({**added["spans"][0], "id": "0" * 8 + added["spans"][0]["id"][8:]})
    assert freshness.content_sha256(added["trace"], added["spans"]) != first
