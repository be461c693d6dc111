"""Traces as Opik's LangChain/LangGraph integration writes them (desk-graph, recorded with
tests/examples/graph_data/record.py), read through the example's target.yaml.

No root span (no hub), specialists found by span type, a tool's text behind the
integration's own ``{"output": ...}``, error text that only the traceback carries, the
answer on stdout as JSON Lines, and correlation by thread. Then spans exported over
OpenTelemetry (harbor-desk, tests/examples/harbor_data/record.py) read through its target.yaml:
attribute keys with dots as one pointer step, an exception recorded on every span it passed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from obai_e2e.config.pointers import SPAN_FIELDS, TRACE_FIELDS
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.answer import from_stdout_json
from obai_e2e.trace import raw
from obai_e2e.trace.curate import curate
from obai_e2e.trace.resolve import TurnKey, build_search
from obai_e2e.trace.values import dig, error_text

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "examples" / "graph_data"
CONFIG = load_target_config(REPO / "examples" / "langgraph-agent" / "target.yaml")


def stored(name: str) -> dict:
    return json.loads((DATA / f"{name}.trace.json").read_text())


def digest(name: str):
    t = stored(name)
    return curate(t["trace"], t["spans"], CONFIG.vocabulary).digest


def test_pointers_start_at_the_span_exactly_as_traces_sample_prints_it():
    t = stored("price")
    rows = raw.tree(t["trace"], t["spans"], CONFIG.vocabulary)["spans"]
    tool = next(r for r in rows if r["type"] == "tool")
    # What the sample shows: the integration wraps the ToolMessage in {"output": ...} ...
    assert set(tool["output"]) == {"output"} and tool["output"]["output"]["type"] == "tool"
    # ... and the pointer written from it reads the text.
    assert dig(tool, CONFIG.vocabulary.specialist_text).startswith("AAPL (Apple) closed at 214.55")
    assert digest("price").specialist_calls[0].output_text == dig(tool, CONFIG.vocabulary.specialist_text)
    text = raw.render(raw.tree(t["trace"], t["spans"], CONFIG.vocabulary))
    assert "quote_lookup [tool]" in text and "← specialist: quote_lookup" in text


def test_the_fields_a_pointer_may_start_at_are_those_traces_sample_prints():
    assert SPAN_FIELDS == raw.SPAN_FIELDS and TRACE_FIELDS == raw.TRACE_FIELDS


def test_no_root_span_and_specialists_by_type():
    d = digest("price_revenue")
    assert d.hub_span_id is None
    assert [c.name for c in d.specialist_calls] == ["quote_lookup", "company_financials"]
    assert [s.skill for s in d.skill_loads] == ["market-data", "filings"]
    assert d.guardrail.allowed is True and d.guardrail.decision == "pass"
    assert d.final_response.startswith("NVDA (NVIDIA) closed at 133.84")


def test_error_text_comes_from_the_traceback_when_the_integration_leaves_the_message_empty():
    t = stored("price_feed_down")
    tool = next(s for s in t["spans"] if s["name"] == "quote_lookup")
    assert tool["error_info"]["message"] is None and tool["error_info"]["exception_type"] == "Exception"
    kind, text = error_text(tool["error_info"])
    assert kind == "Exception"
    assert text.endswith("FeedDown: quote feed for AAPL timed out after 3 attempts"), text
    errors = {e.name: e for e in digest("price_feed_down").error_spans}
    assert errors["quote_lookup"].message == text
    assert "None" not in errors["tools"].message


@pytest.mark.parametrize("info,expected", [
    ({"exception_type": "ValueError", "message": "bad input", "traceback": "..."}, ("ValueError", "bad input")),
    ({"exception_type": "Exception\nmore", "message": None, "traceback": "Traceback:\n  x\nKeyError: 'AAPL'\n\n"},
     ("Exception", "KeyError: 'AAPL'")),
    ({"exception_type": "Exception", "message": "  "}, ("Exception", "")),
    (None, (None, "")),
])
def test_error_text(info, expected):
    assert error_text(info) == expected


def test_the_answer_from_json_lines_on_stdout_is_the_last_line_that_has_the_pointer():
    printed = (DATA / "price.stdout.jsonl").read_text()
    assert len(printed.splitlines()) > 1
    assert from_stdout_json(printed, "/result") == stored("price")["trace"]["output"]["answer"]
    assert from_stdout_json(printed, "/node") == "finish"  # the last step line
    assert from_stdout_json(printed, "/missing") == ""
    assert from_stdout_json('{"result": {"text": "whole"}}', "/result/text") == "whole"  # one document
    assert from_stdout_json("not json\n", "/result") == ""


def test_thread_correlation_searches_the_turns_thread_and_window():
    key = TurnKey(query="q", started_at="2026-06-12T10:00:00.000000Z", ended_at="2026-06-12T10:00:05.000000Z",
                  session="e2e-run-T1-abc")
    method, filter_string, exact = build_search(CONFIG, key)
    assert method == "thread"
    assert filter_string.startswith('thread_id = "e2e-run-T1-abc" AND start_time >= "2026-06-12T09:59:59.9')
    assert exact({"thread_id": "e2e-run-T1-abc", "start_time": "2026-06-12T10:00:01Z"})
    # An earlier turn of the same session (an async job's first answer) is not this turn's trace.
    assert not exact({"thread_id": "e2e-run-T1-abc", "start_time": "2026-06-12T09:59:50Z"})
    assert not exact({"thread_id": "another", "start_time": "2026-06-12T10:00:01Z"})


HARBOR = REPO / "tests" / "examples" / "harbor_data"
HARBOR_CONFIG = load_target_config(REPO / "examples" / "pydantic-agent" / "target.yaml")


def harbor(name: str):
    t = json.loads((HARBOR / f"{name}.trace.json").read_text())
    return curate(t["trace"], t["spans"], HARBOR_CONFIG.vocabulary).digest


def test_opentelemetry_attribute_keys_with_dots_are_one_step_of_a_pointer():
    """harbor-desk's spans came over OTLP: each attribute is kept under its whole key."""
    d = harbor("tariff_eta")
    assert (d.guardrail.decision, d.guardrail.refused) == ("clear", False)  # /output/output.verdict
    assert [c.name for c in d.specialist_calls] == ["vessel_eta", "berth_tariff"]  # execute_tool {name}
    assert d.specialist_calls[1].output_text.endswith("pays 16280.00 EUR for 2 days at berth.")
    assert d.final_response.startswith("MV Kestrel is due at berth 7")  # /output/output.answer of the trace
    down = harbor("cargo_manifest_down").specialist_calls[0]
    assert (down.is_error, down.error_text) == (True, "manifest service unavailable")  # the declared shape


def test_an_exception_recorded_on_opentelemetry_spans_is_their_error():
    d = harbor("eta_raises")
    assert [e.name for e in d.error_spans][:1] == ["harbor turn"]
    assert "execute_tool vessel_eta" in [e.name for e in d.error_spans]
    assert all("arrivals feed timed out for aurora" in (e.message or "") for e in d.error_spans)
