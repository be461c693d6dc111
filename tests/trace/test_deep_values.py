"""Trace values of any depth and size, on a recorded demo trace: every walker of a value finishes, cuts what
it cannot show with a visible line, and leaves ordinary values as they were."""
from __future__ import annotations

import json

import pytest
from obai_e2e.base.jsonwalk import MAX_DEPTH, bounded, deeper, nests_deeper, rebuild
from obai_e2e.base.pii import Pseudonymizer
from obai_e2e.base.redact import MARK, Redactor
from obai_e2e.drive.trace_snapshot import VALUE_CHARS, snapshot
from obai_e2e.judge.rubric.numbers import payload_texts
from obai_e2e.trace import raw as raw_tree
from obai_e2e.trace.curate import curate
from obai_e2e.trace.search import as_dict
from obai_e2e.tracestore.trace_view import MAX_VALUE_CHARS, as_text, trace_page
from obai_e2e.tracestore.truncation import _without_images
from recorded import CLEAN, config, raw

BIG = "0123456789abcdef" * (3 * 1024 * 1024 // 16)  # 3 MB


def nested(depth: int, bottom="bottom") -> object:
    value: object = bottom
    for _ in range(depth):
        value = {"level": value}
    return value


def levels(value: object) -> int:
    count = 0
    while isinstance(value, dict):
        value, count = value.get("level"), count + 1
    return count


def hostile_trace(depth: int) -> tuple[dict, list[dict]]:
    """The recorded MD1 trace with a 3 MB value on the hub and an extra span whose output nests ``depth`` deep."""
    trace, spans = raw(CLEAN, "MD1")
    hub = next(s for s in spans if s.get("parent_span_id") is None)
    hub["input"] = {**(hub.get("input") or {}), "context": BIG}
    spans.append({**hub, "id": hub["id"][:-4] + "dddd", "name": "tool_details", "type": "general",
                  "parent_span_id": hub["id"], "input": {"request": "details"}, "output": nested(depth)})
    trace["output"] = {**(trace.get("output") or {}), "details": nested(depth)}
    return trace, spans


@pytest.mark.parametrize("depth", [300, 10_000])
def test_a_value_read_from_the_backend_is_cut_at_the_depth_limit_with_a_line_saying_so(depth):
    trace, spans = hostile_trace(depth)
    read = as_dict(trace)
    kept = read["output"]["details"]
    assert levels(kept) == MAX_DEPTH - 1 and not nests_deeper(read["output"])  # the output is level 1
    inner = kept
    for _ in range(MAX_DEPTH - 2):
        inner = inner["level"]
    assert inner == {"level": deeper()}
    assert levels(trace["output"]["details"]) == depth  # the caller's dict is not changed
    assert json.loads(json.dumps(read))["input"] == trace["input"]


def test_an_ordinary_value_read_from_the_backend_is_the_same_object():
    trace, spans = raw(CLEAN, "MD1")
    assert all(as_dict(s) is s for s in spans) and as_dict(trace) is trace


@pytest.mark.parametrize("depth", [300, 10_000])
def test_curating_rendering_and_keeping_a_deep_big_trace_finish(depth):
    trace, spans = hostile_trace(depth)
    trace, spans = as_dict(trace), [as_dict(s) for s in spans]
    curated = curate(trace, spans, config().vocabulary, complete=True)
    assert "MARKET_DATA_ANALYSIS CALLS" in curated.text and len(curated.text) < 100_000
    kept = snapshot("initial", trace, spans, True)
    stored = json.dumps(kept, ensure_ascii=False)
    assert f" … [cut: {len(BIG) - VALUE_CHARS} more characters]" in stored and len(stored) < 1_000_000
    tree = raw_tree.tree(trace, spans, config().vocabulary)
    assert "tool_details" in raw_tree.render(tree)


@pytest.mark.parametrize("depth", [300, 10_000])
def test_the_trace_page_shows_a_deep_big_trace_with_its_cuts_stated(depth):
    trace, spans = hostile_trace(depth)  # as the store serves it: not bounded by the harness's reading
    html = trace_page(trace, spans, back=("../report.html", "back")).decode("utf-8")
    assert f"nested deeper than {MAX_DEPTH} levels: not shown" in html
    assert f"showing the first {MAX_VALUE_CHARS:,}" in html
    assert html.count("tool_details") >= 1 and len(html) < 3_000_000


def test_the_text_view_of_an_ordinary_value_is_unchanged():
    assert as_text({"a": "x\ny", "b": [1, {"c": None}], "d": {}, "e": []}) == \
        "a:\n  x\n  y\nb:\n  - 1\n  -\n    c: null\nd: {}\ne: []"
    text = as_text(nested(MAX_DEPTH))
    assert "nested deeper" not in text and text.endswith("level: bottom")
    assert as_text(nested(MAX_DEPTH + 1)).endswith(f"… nested deeper than {MAX_DEPTH} levels: not shown")


def test_redaction_and_pseudonyms_reach_a_string_at_any_depth():
    secret = "sk-live-1234567890"
    value = nested(10_000, f"key {secret} for ann@example.com")
    redacted = Redactor({"OPIK_API_KEY": secret}, ["*KEY*"]).data(value)
    assert levels(redacted) == 10_000
    bottom = redacted
    while isinstance(bottom, dict):
        bottom = bottom["level"]
    assert secret not in bottom and MARK in bottom
    hidden = Pseudonymizer(b"s" * 32).data(value)
    while isinstance(hidden, dict):
        hidden = hidden["level"]
    assert "ann@example.com" not in hidden
    assert Redactor({}, []).data({"a": ("x", 1)}) == {"a": ["x", 1]}


def test_the_numbers_of_a_payload_are_read_at_any_depth_in_document_order():
    assert payload_texts('{"a": ["x", {"b": 1.5, "c": "y"}], "d": 2}') == ["a", "x", "b", "1.5", "c", "y", "d", "2"]
    deep = '{"l":' * 50_000 + '"42"' + "}" * 50_000  # deeper than Python's parser goes: read as one text
    assert payload_texts(deep) == [deep]
    assert payload_texts(json.dumps(nested(500, "7.25"))).count("7.25") == 1


def test_the_store_replaces_images_at_any_depth_and_keeps_the_depth():
    value = nested(5_000, "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg")
    out = _without_images(value)
    assert levels(out) == 5_000
    while isinstance(out, dict):
        out = out["level"]
    assert out == "[image]"


def test_rebuild_keeps_order_and_bounded_keeps_what_needs_no_cut():
    value = {"b": [3, {"x": "y"}], "a": ("t",), "k": {"deep": [[["z"]]]}}
    assert list(rebuild(value)) == ["b", "a", "k"] and rebuild(value)["a"] == ["t"]
    assert rebuild(value, str.upper, key=str.upper, keep=lambda k: k == "k") == \
        {"B": [3, {"X": "Y"}], "A": ["T"], "k": {"deep": [[["z"]]]}}
    assert bounded(value) is value
    assert bounded(value, 2) == {"b": [3, deeper(2)], "a": ["t"], "k": {"deep": deeper(2)}}
    assert rebuild([[[]]], max_depth=1) == [deeper(1)] and rebuild([[]], max_depth=1) == [[]]
