"""OTLP ids kept apart per OTel trace and project, as Opik's storage keeps its rows apart.

Opik derives an id from a millisecond stamp and a hash of the OTel id alone, so the same span id in
another trace with the same stamp, or the same OTel trace id in another project, derives the same
Opik id; Opik keys its rows by project and trace, so both rows stay. These exports are the colliding
pairs, built span by span as OTLP protobuf; both sides must read back intact, each with its own
name, output and spans, and a re-export must map to the same ids as before.
"""
from __future__ import annotations

import os

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from .helpers import project_name
from .test_otlp import expected_uuid7

OTLP_PATH = "/v1/private/otel/v1/traces"
START_NS = 1_790_000_000_123_000_000  # one millisecond for every span below
SPAN_ID = bytes.fromhex("00000000000000aa")


def otel_span(trace_id: bytes, span_id: bytes, name: str, answer: str, parent: bytes = b"") -> Span:
    return Span(trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name,
                start_time_unix_nano=START_NS, end_time_unix_nano=START_NS + 5_000_000,
                attributes=[KeyValue(key="output.value", value=AnyValue(string_value=answer))])


def export(api, project: str, *spans: Span) -> None:
    body = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])])
    response = api.send("POST", OTLP_PATH, raw=body.SerializeToString(),
                        headers={"Content-Type": "application/x-protobuf", "projectName": project})
    assert response.status_code == 200, response.text


def by_name(api, project: str) -> tuple[dict, dict]:
    traces = {t["name"]: t for t in api.search("traces", project, truncate=False)}
    spans = {s["name"]: s for s in api.search("spans", project, truncate=False)}
    return traces, spans


def test_a_span_id_reused_in_another_trace_at_the_same_millisecond_moves_nothing(api):
    project = project_name("span-reuse")
    trace_a, trace_b = os.urandom(16), os.urandom(16)
    export(api, project, otel_span(trace_a, SPAN_ID, "run A", "answer A"))
    export(api, project, otel_span(trace_b, SPAN_ID, "run B", "answer B"))
    traces, spans = by_name(api, project)
    assert set(traces) == {"run A", "run B"} and set(spans) == {"run A", "run B"}
    # A keeps Opik's own ids; B's span, whose Opik id A already holds, gets one of its own.
    millis = START_NS // 1_000_000
    assert spans["run A"]["id"] == expected_uuid7(int.from_bytes(SPAN_ID, "big"), 8, millis)
    assert spans["run B"]["id"] != spans["run A"]["id"]
    for name in ("run A", "run B"):
        assert spans[name]["trace_id"] == traces[name]["id"]
        assert spans[name]["output"] == traces[name]["output"] == {"output.value": f"answer {name[-1]}"}


def test_the_same_otel_trace_id_in_another_project_takes_nothing_from_the_first(api):
    first, second = project_name("otel-a"), project_name("otel-b")
    trace_id, child_id = os.urandom(16), os.urandom(8)
    export(api, first, otel_span(trace_id, SPAN_ID, "first run", "first answer"),
           otel_span(trace_id, child_id, "first tool", "first result", parent=SPAN_ID))
    export(api, second, otel_span(trace_id, SPAN_ID, "second run", "second answer"),
           otel_span(trace_id, child_id, "second tool", "second result", parent=SPAN_ID))
    one, one_spans = by_name(api, first)
    two, two_spans = by_name(api, second)
    assert set(one) == {"first run"} and set(two) == {"second run"}
    assert one["first run"]["output"] == {"output.value": "first answer"}
    assert two["second run"]["output"] == {"output.value": "second answer"}
    assert one["first run"]["id"] == expected_uuid7(int.from_bytes(trace_id, "big"), 16, START_NS // 1_000_000)
    assert two["second run"]["id"] != one["first run"]["id"]
    # Each project's tool span hangs under its own root, in its own trace.
    assert set(one_spans) == {"first run", "first tool"} and set(two_spans) == {"second run", "second tool"}
    for spans, traces, root in ((one_spans, one, "first"), (two_spans, two, "second")):
        assert spans[f"{root} tool"]["parent_span_id"] == spans[f"{root} run"]["id"]
        assert {s["trace_id"] for s in spans.values()} == {traces[f"{root} run"]["id"]}
    assert not {s["id"] for s in one_spans.values()} & {s["id"] for s in two_spans.values()}


def test_a_child_exported_before_its_colliding_parent_still_hangs_under_it(api):
    """The parent's id is chosen when the child names it, and the parent's own export gets that id."""
    project = project_name("late-parent")
    trace_a, trace_b, child = os.urandom(16), os.urandom(16), os.urandom(8)
    export(api, project, otel_span(trace_a, SPAN_ID, "root A", "a"))
    export(api, project, otel_span(trace_b, child, "child B", "c", parent=SPAN_ID))
    export(api, project, otel_span(trace_b, SPAN_ID, "root B", "b"))
    export(api, project, otel_span(trace_b, SPAN_ID, "root B", "b"))  # a retried batch changes nothing
    traces, spans = by_name(api, project)
    assert len(api.search("spans", project)) == 3
    assert spans["child B"]["parent_span_id"] == spans["root B"]["id"] != spans["root A"]["id"]
    assert spans["child B"]["trace_id"] == spans["root B"]["trace_id"] == traces["root B"]["id"]
    assert traces["root A"]["output"] == {"output.value": "a"}
