"""Benchmark of OTLP ingestion in the local trace store.

Exports agent turns (a root span with a model call, a tool call and a nested model call:
4 spans each) through the real ``opentelemetry-sdk`` BatchSpanProcessor and OTLP/HTTP
protobuf exporter into a fresh store, then reads every trace back with the ``opik`` SDK.
Prints spans per second of export (from the first span to the end of the exporter's
flush), the read-back time and, last, the figures as one JSON line.

    uv run python bench/bench_otlp.py [--turns N]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from obai_e2e.tracestore import ensure_running, stop  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402


def export_turns(endpoint: str, headers: dict[str, str], turns: int) -> float:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, headers=headers),
                                                   max_queue_size=turns * 4 + 1))
    tracer = provider.get_tracer("bench-agent")
    started = time.perf_counter()
    for turn in range(turns):
        with tracer.start_as_current_span("agent run", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": f"thread-{turn % 10}",
                "opik.tags": json.dumps([f"corr-{turn}"]), "input.value": f"question {turn}"}):
            with tracer.start_as_current_span("chat model", attributes={
                    "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 3}):
                pass
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": '{"q": 1}'}):
                with tracer.start_as_current_span("chat model", attributes={"gen_ai.request.model": "m"}):
                    pass
    provider.shutdown()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()
    store_dir = Path(tempfile.mkdtemp(prefix="bench-otlp-"))
    info = ensure_running(store_dir)
    project = f"bench-otlp-{uuid.uuid4().hex[:8]}"
    try:
        seconds = export_turns(info.api_url + "/v1/private/otel/v1/traces",
                               {"Authorization": info.token, "projectName": project}, args.turns)
        import opik

        client = opik.Opik(host=info.api_url, api_key=info.token, workspace="default", project_name=project)
        read_start = time.perf_counter()
        traces = client.search_traces(project_name=project, max_results=args.turns * 2, truncate=False)
        read_s = time.perf_counter() - read_start
        client.end()
    finally:
        stop(store_dir)
    spans = args.turns * 4
    figures = {"turns": args.turns, "spans": spans, "export_s": round(seconds, 3),
               "spans_per_s": round(spans / seconds, 1), "traces_read": len(traces), "read_s": round(read_s, 3)}
    print(f"exported {spans} spans ({args.turns} turns) in {seconds:.2f} s: {spans / seconds:,.0f} spans/s")
    print(f"read {len(traces)} traces back with the opik SDK in {read_s:.2f} s")
    print(json.dumps(figures))
    return 0 if len(traces) == args.turns else 1


if __name__ == "__main__":
    sys.exit(main())
