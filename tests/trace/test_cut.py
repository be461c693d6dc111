"""Values that arrive cut short are recognised; whole values, recorded from the real demo, never are."""
from __future__ import annotations

import json

import pytest
from obai_e2e.trace.curate import curate
from obai_e2e.trace.cut import cut_reason
from obai_e2e.tracestore.truncation import slim
from recorded import config, raw, recordings, traces


def _payload(rows: int) -> dict:
    return {"content": [{"type": "text", "text": "AAPL closed at 187.20."}],
            "structuredContent": {"ticker": "AAPL", "rows": ["served from the bundled sample data"] * rows}}


@pytest.mark.parametrize("group,unit", recordings()[::4], ids=lambda v: v)
def test_no_recorded_value_is_taken_for_a_cut_one(group, unit):
    for t in traces(group, unit):
        for item in [t["trace"], *t["spans"]]:
            for name in ("input", "output", "metadata"):
                assert cut_reason(item.get(name)) is None, (item.get("name"), name)
        assert curate(t["trace"], t["spans"], config().vocabulary).digest.cut == []


def test_opik_cutting_a_long_output_to_a_string_is_recognised():
    big = _payload(400)
    slimmed = slim({"output": big})["output"]  # what a search without truncate=false returns
    assert isinstance(slimmed, str) and len(slimmed) == 10_001
    assert "where a JSON value was written" in cut_reason(slimmed)
    assert cut_reason(big) is None and cut_reason(_payload(10)) is None


@pytest.mark.parametrize("value, named", [
    ({"file": {"opik_truncated": True, "reason": "<omitted_due_to_size_25MB_error_code_413_400>"}}, "size marker"),
    ({"content": [{"type": "image", "data": "[image]"}]}, "[image]"),
    ({"chart": "see [output-attachment-1-1767225600000-sdk.png]"}, "attachment"),
])
def test_the_markers_opik_and_its_sdk_leave_are_recognised(value, named):
    assert named in cut_reason(value)


@pytest.mark.parametrize("value", [
    "{not json, but short", "[1, 2", json.dumps(_payload(400)), "plain text " * 500, {"opik_truncated": False},
    ["[image] is a word here"],
])
def test_whole_values_that_only_look_odd_are_not_taken_for_cut_ones(value):
    assert cut_reason(value) is None


def test_curation_names_the_cut_value_and_keeps_the_whole_payload_of_the_others():
    trace, spans = raw("clean", "MD1")
    first = min((s for s in spans if s.get("type") == "tool"), key=lambda s: s["start_time"])
    first["output"] = slim({"output": _payload(400)})["output"]
    digest = curate(trace, spans, config().vocabulary).digest
    [cut] = digest.cut
    assert (cut.role, cut.span_id, cut.field) == ("specialist", first["id"], "output")
    assert digest.to_json()["cut"][0]["reason"] == cut.reason
    whole = curate(*raw("clean", "MD1"), config().vocabulary).digest
    assert "cut" not in whole.to_json()  # a digest with nothing cut is written as before


def test_opik_cutting_a_long_string_output_is_recognised_by_its_opening_quote():
    """Opik's slimming cuts the JSON text of a string value too: it opens with a quote and never closes."""
    written = "The ledger shows \"settled\" entries: " + "row " * 5000
    [cut] = [slim({"output": written})["output"]]
    assert isinstance(cut, str) and cut.startswith('"') and len(cut) < len(written)
    assert "cut it" in cut_reason(cut)
    assert cut_reason(written) is None                              # the whole string as the agent wrote it
    assert cut_reason('"Yes," she said. ' + "and more " * 200) is None  # prose that opens with a quotation
