"""OTLP/HTTP trace exports into the store, as an OTel-instrumented agent sends them to Opik.

The payloads come from the real ``opentelemetry-sdk`` and its OTLP/HTTP protobuf exporter
(a JSON body is the same spans in OTLP/JSON); they are read back with the ``opik`` SDK,
as the harness reads a turn's trace.
"""
from __future__ import annotations

import hashlib
import json
import uuid

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from .helpers import Api, project_name, sdk_client, trace_payload

OTLP_PATH = "/v1/private/otel/v1/traces"


def expected_uuid7(otel_id: int, width: int, millis: int) -> str:
    """Opik's derivation written out again: 48-bit ms stamp, then SHA-256 of the id's bytes, v7 bits."""
    raw = bytearray(millis.to_bytes(6, "big") + hashlib.sha256(otel_id.to_bytes(width, "big")).digest()[:10])
    raw[6] = 0x70 | (raw[6] & 0x0F)
    raw[8] = 0x80 | (raw[8] & 0x3F)
    return str(uuid.UUID(bytes=bytes(raw)))


def exporter_for(store, project: str) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=store.api_url.rstrip("/") + OTLP_PATH,
                            headers={"Authorization": store.token, "projectName": project,
                                     "Comet-Workspace": "default"})


def one_turn(processor, scope: str = "pydantic-ai", thread: str = "thread-7") -> dict:
    """An agent turn: a root run, a model call, a tool call, a failing guardrail; returns its OTel spans."""
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-agent"}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(scope)
    spans = {}
    with tracer.start_as_current_span("agent run", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": thread,
        "opik.tags": json.dumps(["corr-1", "otel"]), "opik.metadata.run_tag": "r-42",
        "input.value": "What did AAPL close at?", "gen_ai.system_instructions": "be brief",
    }) as root:
        spans["root"] = root
        with tracer.start_as_current_span("chat model-x", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.provider.name": "other",
            "gen_ai.request.model": "model-x", "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 5,
            "gen_ai.input.messages": json.dumps([{"role": "user", "content": "AAPL?"}]),
        }) as llm:
            spans["llm"] = llm
        with tracer.start_as_current_span("execute_tool get_price", attributes={
            "gen_ai.tool.name": "get_price", "gen_ai.tool.call.arguments": '{"symbol": "AAPL"}',
            "gen_ai.tool.call.result": '{"close": 190.5}', "logfire.msg": "running tool",
            "logfire.json_schema": "{}", "code.function": "get_price",
        }) as tool:
            spans["tool"] = tool
        with tracer.start_as_current_span("guardrail", record_exception=False) as guard:
            spans["guard"] = guard
            guard.record_exception(ValueError("guardrail tripped"))
            guard.set_status(Status(StatusCode.ERROR, "guardrail tripped"))
        root.set_attribute("output.value", "AAPL closed at 190.5")
    provider.shutdown()
    return spans


def read_back(store, project: str, count: int) -> tuple[list, list]:
    client = sdk_client(store, project)
    try:
        traces = client.search_traces(project_name=project, truncate=False)
        spans = client.search_spans(project_name=project, truncate=False, wait_for_at_least=count,
                                    wait_for_timeout=30)
    finally:
        client.end()
    return traces, spans


@pytest.fixture(scope="module")
def protobuf_turn(trace_store):
    """One turn exported span by span (each span its own protobuf export batch, children first)."""
    project = project_name("otel")
    otel = one_turn(SimpleSpanProcessor(exporter_for(trace_store, project)))
    traces, spans = read_back(trace_store, project, 4)
    return {"project": project, "otel": otel, "traces": traces, "spans": {s.name: s for s in spans}}


def test_one_turns_spans_land_in_one_trace_across_export_batches(protobuf_turn):
    traces, spans, otel = protobuf_turn["traces"], protobuf_turn["spans"], protobuf_turn["otel"]
    assert len(traces) == 1 and len(spans) == 4
    trace = traces[0]
    assert {span.trace_id for span in spans.values()} == {trace.id}
    # The trace id comes from the first export naming the OTel trace: the model call, which ended first.
    first_ms = otel["llm"].start_time // 1_000_000
    assert trace.id == expected_uuid7(otel["root"].context.trace_id, 16, first_ms)
    root = spans["agent run"]
    assert root.id == expected_uuid7(otel["root"].context.span_id, 8, first_ms)
    assert root.parent_span_id is None
    assert {spans[name].parent_span_id for name in ("chat model-x", "execute_tool get_price", "guardrail")} == {root.id}


def test_root_span_becomes_the_trace_with_thread_tags_and_opik_metadata(protobuf_turn):
    trace = protobuf_turn["traces"][0]
    assert trace.name == "agent run"
    assert trace.thread_id == "thread-7"
    assert sorted(trace.tags) == ["corr-1", "otel"]
    assert trace.input == {"input.value": "What did AAPL close at?", "gen_ai.system_instructions": "be brief"}
    assert trace.output == {"output.value": "AAPL closed at 190.5"}
    assert trace.metadata["opik.metadata.run_tag"] == "r-42"
    assert trace.metadata["integration"] == "pydantic-ai"
    assert trace.metadata["thread_id"] == "thread-7"


def test_span_types_model_provider_and_usage_follow_the_gen_ai_rules(protobuf_turn):
    spans = protobuf_turn["spans"]
    # invoke_agent is an agent run, not a model call, though gen_ai.system_instructions types spans llm
    assert spans["agent run"].type == "general"
    llm = spans["chat model-x"]
    assert (llm.type, llm.model, llm.provider) == ("llm", "model-x", "openai")  # gen_ai.system wins
    assert llm.usage == {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    assert llm.input == {"gen_ai.input.messages": [{"role": "user", "content": "AAPL?"}]}
    tool = spans["execute_tool get_price"]
    assert tool.type == "tool"
    assert tool.input == {"gen_ai.tool.call.arguments": {"symbol": "AAPL"}}
    assert tool.output == {"gen_ai.tool.call.result": {"close": 190.5}}
    assert tool.metadata["gen_ai.tool.name"] == "get_price"
    assert tool.metadata["logfire.msg"] == "running tool" and tool.metadata["code.function"] == "get_price"
    assert "logfire.json_schema" not in (tool.metadata or {}) and "logfire.json_schema" not in (tool.input or {})


def test_exception_event_becomes_error_info(protobuf_turn):
    guard = protobuf_turn["spans"]["guardrail"]
    assert guard.error_info.exception_type == "ValueError"
    assert guard.error_info.message == "guardrail tripped"
    assert "guardrail tripped" in guard.error_info.traceback
    events = guard.metadata["opentelemetry.events"]
    assert [event["name"] for event in events] == ["exception"]
    assert protobuf_turn["spans"]["chat model-x"].error_info is None


def test_a_re_export_keeps_ids_and_adds_nothing(trace_store, protobuf_turn):
    """The same spans exported again (a retried batch) map to the same ids."""
    captured = InMemorySpanExporter()
    project = project_name("otel-again")
    one_turn(SimpleSpanProcessor(captured))
    finished = captured.get_finished_spans()
    exporter = exporter_for(trace_store, project)
    assert exporter.export(finished[:2]).name == "SUCCESS"
    assert exporter.export(finished).name == "SUCCESS"
    exporter.shutdown()
    traces, spans = read_back(trace_store, project, 4)
    assert len(traces) == 1 and len(spans) == 4
    assert len({span.id for span in spans}) == 4


def test_json_body_with_hex_ids_maps_like_protobuf(trace_store, protobuf_turn):
    captured = InMemorySpanExporter()
    one_turn(SimpleSpanProcessor(captured), thread="thread-json")
    body = json_format.MessageToDict(encode_spans(captured.get_finished_spans()))
    for resource in body["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:  # OTLP/JSON spells ids in hex
                        span[key] = __import__("base64").b64decode(span[key]).hex()
    project = project_name("otel-json")
    api = Api(trace_store.api_url, trace_store.token)
    try:
        response = api.send("POST", OTLP_PATH, body, headers={"projectName": project})
    finally:
        api.close()
    assert response.status_code == 200, response.text
    traces, spans = read_back(trace_store, project, 4)
    assert len(traces) == 1 and traces[0].thread_id == "thread-json"
    by_name = {span.name: span for span in spans}
    assert by_name["chat model-x"].usage["total_tokens"] == 16
    assert {span.trace_id for span in spans} == {traces[0].id}


@pytest.mark.parametrize("content_type, body, status", [
    ("application/x-protobuf", b"\xff\xff\xff", 400),
    ("application/json", b'{"resourceSpans": "no"}', 400),
    ("text/plain", b"{}", 415),
])
def test_a_body_that_is_not_an_otlp_export_is_refused_by_name(api, content_type, body, status):
    response = api.send("POST", OTLP_PATH, raw=body, headers={"Content-Type": content_type, "projectName": "x"})
    assert response.status_code == status
    assert "OTLP" in response.json()["errors"][0] or "Content-Type" in response.json()["errors"][0]


def test_an_export_without_the_token_is_refused(trace_store):
    api = Api(trace_store.api_url, None)
    try:
        response = api.send("POST", OTLP_PATH, raw=b"", headers={"Content-Type": "application/x-protobuf"})
    finally:
        api.close()
    assert response.status_code == 401


def test_an_exporter_configured_only_by_the_harness_variables_reaches_the_project(trace_store, monkeypatch):
    """OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _HEADERS as a turn gets them, read by the exporter itself."""
    from obai_e2e.base.opik_env import otlp_env

    project = project_name("otel env") + " Ä/,="
    for name, value in otlp_env(trace_store.api_url, project, workspace="default", key=trace_store.token).items():
        monkeypatch.setenv(name, value)
    one_turn(SimpleSpanProcessor(OTLPSpanExporter()), thread="thread-env")
    traces, spans = read_back(trace_store, project, 4)
    assert len(traces) == 1 and traces[0].thread_id == "thread-env" and len(spans) == 4


def test_the_store_counts_refused_writes_per_project(api):
    project = project_name("Refused")
    for _ in range(2):
        api.send("POST", OTLP_PATH, raw=b"\xff\xff", headers={"Content-Type": "application/x-protobuf",
                                                              "projectName": project})
    api.send("POST", "/v1/private/otel/v1/logs", raw=b"", headers={"Content-Type": "application/x-protobuf",
                                                                     "projectName": project})
    response = api.send("GET", "/obai-trace-store/refusals", headers={}, raw=None)
    everything = response.json()["refusals"]
    found = api.http.get("/obai-trace-store/refusals", params={"project": project.upper()}).json()["refusals"]
    assert [(g["status"], g["count"]) for g in found] == [(400, 2), (404, 1)]
    assert found[1]["message"] == "no such endpoint: POST /api/v1/private/otel/v1/logs"
    assert all(g in everything for g in found)
    later = api.http.get("/obai-trace-store/refusals", params={"project": project, "since": "2999-01-01T00:00:00Z"})
    assert later.json() == {"refusals": []}


def test_otlp_metrics_are_not_implemented_as_at_opik(api):
    response = api.send("POST", "/v1/private/otel/v1/metrics", raw=b"",
                        headers={"Content-Type": "application/x-protobuf"})
    assert response.status_code == 501 and "metrics" in response.json()["errors"][0]


def test_openinference_logfire_and_opik_attach_attributes_map_as_at_opik(trace_store, api):
    """session.id is the thread; model_name, all_messages and a JSON usage are logfire's; opik.trace_id attaches."""
    project = project_name("otel-keys")
    existing = trace_payload(project, name="sdk trace")
    api.batch("traces", [existing])
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter_for(trace_store, project)))
    tracer = provider.get_tracer("openinference.instrumentation.smolagents")
    with tracer.start_as_current_span("run", attributes={"session.id": "sess-1", "input.value": '"quoted"'}):
        with tracer.start_as_current_span("model", attributes={
                "model_name": "test-model", "all_messages": json.dumps([{"role": "user"}]),
                "usage": json.dumps({"input_tokens": 4, "output_tokens": 2}), "unmapped.key": 3}):
            pass
    with tracer.start_as_current_span("attached", attributes={"opik.trace_id": existing["id"]}):
        pass
    provider.shutdown()
    traces, spans = read_back(trace_store, project, 3)
    by_name = {span.name: span for span in spans}
    assert sorted(t.name for t in traces) == ["run", "sdk trace"]           # the attached span made no trace
    run = next(t for t in traces if t.name == "run")
    assert run.thread_id == "sess-1" and run.input == {"input.value": "quoted"}
    model = by_name["model"]
    assert (model.type, model.model) == ("llm", "test-model")
    assert model.usage == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
    assert model.input == {"all_messages": [{"role": "user"}], "unmapped.key": 3}
    assert model.metadata["integration"] == "openinference.instrumentation.smolagents"
    assert by_name["attached"].trace_id == existing["id"] and by_name["attached"].parent_span_id is None
