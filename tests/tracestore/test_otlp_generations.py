"""Both OTLP mapping generations on recorded OpenInference spans, read back through the SDK.

The export is a real smolagents run, instrumented by OpenInference (``data/smolagents-openinference.json``,
re-recorded by ``record_openinference.py``): an agent span, two steps, a model call each and two tool
calls. Today's Opik (``2.2``, the store's default) files every attribute by its rule: ``input.value``
under its own key in the input, ``llm.input_messages.*`` flattened into the input, token counts as
usage without their prefix. Opik's pending normaliser (``next``) puts ``input.value`` / ``output.value``
in the span's own input and output (parsed when their mime type is JSON), types the span by
``openinference.span.kind``, reassembles messages, tools and tool calls, and counts tokens under
Opik's usage names. Both send ``error.*``, ``exception.*`` and ``server.*`` attributes to metadata.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from obai_e2e.tracestore import daemon
from obai_e2e.tracestore.db import Store
from obai_e2e.tracestore.server import make_server
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from .helpers import Api, project_name
from .test_otlp import OTLP_PATH, exporter_for

RECORDED = json.loads((Path(__file__).parent / "data" / "smolagents-openinference.json").read_text(encoding="utf-8"))
TASK = "What did AAPL close at?"
ANSWER = "AAPL last closed at 238.41."


class _Store:
    def __init__(self, url: str, token: str) -> None:
        self.api_url, self.token = url, token


@pytest.fixture(scope="module", params=["2.2", "next"])
def generation(request, tmp_path_factory):
    """A store imitating one Opik, with the recorded export (and a span with general attributes) in it."""
    store = Store(tmp_path_factory.mktemp(f"gen-{request.param}") / "db.sqlite3")
    token = f"token-{request.param}"
    server = make_server(store, "127.0.0.1", 0, 20 * 1024 * 1024, {"opik_version": request.param}, token=token)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api"
    api = Api(url, token)
    project = project_name(f"smolagents-{request.param}")
    response = api.send("POST", OTLP_PATH, RECORDED["export"], headers={"projectName": project})
    assert response.status_code == 200, response.text
    _general_span(_Store(url, token), project)
    spans = api.search("spans", project, truncate=False)
    traces = api.search("traces", project, truncate=False)
    yield {"name": request.param, "api": api, "project": project, "traces": traces,
           "spans": {(s["name"], s["start_time"]): s for s in spans}, "by_name": _by_name(spans)}
    api.close()
    server.shutdown()
    server.server_close()
    store.close()


def _by_name(spans: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for span in sorted(spans, key=lambda s: s["start_time"]):
        out.setdefault(span["name"], []).append(span)
    return out


def _general_span(store, project: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter_for(store, project)))
    with provider.get_tracer("plain-agent").start_as_current_span("http call", attributes={
            "error.type": "TimeoutError", "error.message": "upstream slow", "exception.type": "TimeoutError",
            "exception.message": "read timed out", "exception.stacktrace": "Traceback ...", "server.address": "api.example",
            "server.port": 8443, "http.route": "/quote"}):
        pass
    provider.shutdown()


def test_every_generation_sends_error_exception_and_server_attributes_to_metadata(generation):
    span = generation["by_name"]["http call"][0]
    for key, value in (("error.type", "TimeoutError"), ("error.message", "upstream slow"),
                       ("exception.type", "TimeoutError"), ("exception.message", "read timed out"),
                       ("exception.stacktrace", "Traceback ..."), ("server.address", "api.example"), ("server.port", 8443)):
        assert span["metadata"][key] == value, key
    assert span["input"] == {"http.route": "/quote"}  # an attribute with no rule still goes to input


def test_the_agent_run_becomes_the_trace_as_each_generation_maps_it(generation):
    trace = next(t for t in generation["traces"] if t["name"] == "ToolCallingAgent.run")
    if generation["name"] == "2.2":
        assert trace["input"]["input.value"]["task"] == TASK
        assert trace["output"] == {"output.value": ANSWER}
    else:
        # input.value has no JSON mime type: it is the span's input as the text it is.
        assert isinstance(trace["input"], str) and json.loads(trace["input"])["task"] == TASK
        assert trace["output"] == ANSWER
        assert trace["metadata"]["openinference.span.kind"] == "AGENT"
    assert trace["metadata"]["smolagents.max_steps"] == 3  # the smolagents rule, in both


def test_span_types_usage_and_model_of_the_recorded_spans(generation):
    by_name = generation["by_name"]
    llm, tool, step, agent = (by_name[n][0] for n in ("ScriptedModel.generate", "SimpleTool", "Step 1",
                                                       "ToolCallingAgent.run"))
    assert (llm["type"], llm["model"]) == ("llm", "scripted-model")
    assert tool["type"] == "tool" and step["type"] == "general"
    if generation["name"] == "2.2":
        assert llm["usage"] == {"prompt": 120, "completion": 9, "total": 129}  # the prefix rule's names
        assert agent["type"] == "llm"  # its token counts type it, as Opik's rule does today
    else:
        assert agent["type"] == "general"  # AGENT: its kind decides
        assert llm["usage"] == {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}


def test_a_model_calls_messages_as_each_generation_maps_them(generation):
    llm = generation["by_name"]["ScriptedModel.generate"][0]
    if generation["name"] == "2.2":
        assert llm["input"]["llm.input_messages.1.message.role"] == "user"
        assert llm["input"]["input.value"]["messages"][0].startswith("ChatMessage(")
        assert llm["output"]["output.value"]["tool_calls"][0]["function"]["name"] == "get_price"
        assert "llm.output_messages.0.message.role" in llm["output"]
        return
    messages = llm["input"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["contents"][0]["type"] == "text" and TASK in messages[1]["contents"][0]["text"]
    assert llm["input"]["invocation_parameters"] == {}
    assert [t["json_schema"]["function"]["name"] for t in llm["input"]["tools"]] == ["get_price", "final_answer"]
    # The raw output (JSON, by its mime type) and the reassembled output messages, which win a collision.
    assert llm["output"]["role"] == "assistant" and llm["output"]["token_usage"]["input_tokens"] == 120
    assert llm["output"]["messages"] == [{"role": "assistant",
                                          "tool_calls": [{"id": "call_0", "function": {"name": "get_price"}}]}]
    assert llm["metadata"]["input.mime_type"] == "application/json"
    assert not any(key.startswith("llm.") for key in {**llm["input"], **llm["output"], **llm["metadata"]})


def test_a_tool_calls_input_and_output_as_each_generation_maps_them(generation):
    tool = generation["by_name"]["SimpleTool"][0]
    if generation["name"] == "2.2":
        assert tool["output"] == {"output.value": "AAPL closed at 238.41 on 2026-04-30", "output.mime_type": "text/plain"}
        assert tool["input"]["tool.parameters"]["symbol"]["type"] == "string"
        assert tool["metadata"]["tool.name"] == "get_price"
    else:
        assert tool["output"] == "AAPL closed at 238.41 on 2026-04-30"
        assert isinstance(tool["input"], str) and json.loads(tool["input"])["kwargs"] == {"symbol": "AAPL"}
        assert tool["metadata"]["tool.name"] == "get_price"
        assert json.loads(tool["metadata"]["tool.parameters"])["symbol"]["type"] == "string"  # kept as it is


def test_the_setting_names_the_opik_it_imitates_and_refuses_anything_else(monkeypatch):
    assert daemon.opik_version() == "2.2"
    monkeypatch.setenv(daemon.OPIK_VERSION_ENV, "next")
    assert daemon.opik_version() == "next" and daemon.opik_version("2.2") == "2.2"
    monkeypatch.setenv(daemon.OPIK_VERSION_ENV, "1.9")
    with pytest.raises(Exception) as caught:
        daemon.opik_version()
    assert daemon.OPIK_VERSION_ENV in str(caught.value) and "2.2, next" in str(caught.value)


def _kv(key: str, value) -> "KeyValue":
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    if isinstance(value, list):
        return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value])))
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def test_the_normaliser_reads_the_rest_of_the_openinference_conventions():
    """Attributes the recorded run does not carry, as the OpenInference conventions spell them."""
    from obai_e2e.tracestore.otlp_openinference import normalise

    assert normalise([_kv("input.value", "plain")]) is None  # no span kind: not an OpenInference span
    found = normalise([
        _kv("openinference.span.kind", "guardrail"), _kv("llm.provider", "aws"), _kv("llm.request.model_name", "req"),
        _kv("llm.response.model_name", "resp"), _kv("session.id", "sess-9"), _kv("tag.tags", ["a", "b"]),
        _kv("metadata", json.dumps({"team": "desk", "thread_id": "not-this"})), _kv("llm.cost.total", "0.25"),
        _kv("llm.prompt_template.template", "Price of {t}?"), _kv("llm.prompt_template.variables", '{"t": "AAPL"}'),
        _kv("llm.function_call", '{"name": "quote"}'), _kv("llm.finish_reason", "stop"),
        _kv("llm.prompts.0.prompt.text", "first"), _kv("llm.choices.1.completion.text", "second"),
        _kv("llm.input_messages.0.message.role", "user"),
        _kv("llm.input_messages.0.message.contents.0.message_content.image.image.url", "https://x/p.png"),
        _kv("llm.input_messages.0.message.function_call_arguments_json", '{"symbol": "AAPL"}'),
        _kv("llm.input_messages.x.message.role", "user"),              # not an index: kept in metadata
        _kv("llm.token_count.prompt", "-3"),                             # not a count: kept in metadata
        _kv("input.value", '{"q": 1}'), _kv("input.mime_type", "application/json; charset=utf-8"),
        _kv("embedding.model_name", "e5"), _kv("gen_ai.system", "openai"),
    ])
    assert found is not None and found.span_type == "guardrail"
    assert (found.provider, found.model, found.session, found.cost) == ("bedrock", "resp", "sess-9", 0.25)
    assert found.tags == ["a", "b"] and found.metadata["team"] == "desk" and "thread_id" not in found.metadata
    assert found.metadata["llm.input_messages.x.message.role"] == "user"
    assert found.metadata["llm.token_count.prompt"] == "-3" and found.usage == {}
    assert found.metadata["embedding.model_name"] == "e5"
    assert "gen_ai.system" not in found.consumed  # left to the common rules
    assert found.compose_input({}) == {
        "q": 1, "prompt_template": {"template": "Price of {t}?", "variables": {"t": "AAPL"}},
        "messages": [{"role": "user", "contents": [{"image": {"url": "https://x/p.png"}}],
                      "function_call": {"arguments": {"symbol": "AAPL"}}}],
        "prompts": [{"text": "first"}]}
    assert found.compose_output({"extra": True}) == {
        "extra": True, "finish_reason": "stop", "choices": [{"text": "second"}], "function_call": {"name": "quote"}}
