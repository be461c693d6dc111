"""Record the OpenInference spans of a real smolagents run, for the store's mapping tests.

    uv run --no-project --python 3.11 --with smolagents --with openinference-instrumentation-smolagents \
        --with opentelemetry-sdk python tests/tracestore/record_openinference.py

A ToolCallingAgent, instrumented by ``openinference-instrumentation-smolagents``, answers a price
question with a scripted model (two steps: a tool call, then the final answer; no network) and
one tool. Its spans are written as an OTLP/JSON export (hex ids, as the OTLP specification spells
them) to ``tests/tracestore/data/smolagents-openinference.json``, with the package versions.
Neither package is a dependency of the project: the recorded export is what the tests read.
"""
from __future__ import annotations

import base64
import json
import sys
from importlib.metadata import version
from pathlib import Path

from google.protobuf import json_format
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

OUT = Path(__file__).resolve().parent / "data" / "smolagents-openinference.json"


def main() -> int:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model, TokenUsage)

    @tool
    def get_price(symbol: str) -> str:
        """The latest close of a ticker.

        Args:
            symbol: the ticker, e.g. AAPL
        """
        return f"{symbol} closed at 238.41 on 2026-04-30"

    class ScriptedModel(Model):
        """Calls get_price first, then answers with what it returned."""

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
            roles = [m.get("role") if isinstance(m, dict) else getattr(m, "role", None) for m in messages]
            step = sum(1 for role in roles if "tool" in str(getattr(role, "value", role)))
            name, arguments = (("get_price", {"symbol": "AAPL"}) if step == 0 else
                               ("final_answer", {"answer": "AAPL last closed at 238.41."}))
            call = ChatMessageToolCall(id=f"call_{step}", type="function",
                                       function=ChatMessageToolCallFunction(name=name, arguments=arguments))
            return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=[call],
                               token_usage=TokenUsage(input_tokens=120 + step, output_tokens=9))

    # The instrumentor wraps the models the smolagents package exports: the scripted one joins them first.
    import smolagents

    smolagents.ScriptedModel = ScriptedModel
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    SmolagentsInstrumentor().instrument(tracer_provider=provider)
    agent = ToolCallingAgent(tools=[get_price], model=ScriptedModel(model_id="scripted-model"), max_steps=3)
    answer = agent.run("What did AAPL close at?")
    provider.force_flush()
    body = json_format.MessageToDict(encode_spans(exporter.get_finished_spans()))
    for resource in body.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({
        "recorded_with": {name: version(name) for name in (
            "smolagents", "openinference-instrumentation-smolagents", "opentelemetry-sdk")},
        "answer": str(answer),
        "export": body,
    }, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({sum(len(s.get('spans', [])) for r in body['resourceSpans'] for s in r['scopeSpans'])} spans)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
