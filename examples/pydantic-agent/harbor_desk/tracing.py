"""Where the turn's spans go: OTLP/HTTP (protobuf) to the endpoint in the standard OpenTelemetry
variables, or nowhere.

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``OTEL_EXPORTER_OTLP_HEADERS`` say where (the harness
sets both for a turn); ``HARBOR_PROJECT``, when set, names the Opik project in the
``projectName`` header. ``HARBOR_TRACE=off``, or no endpoint: no trace.
"""
from __future__ import annotations

import os

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.util.re import parse_env_headers

from . import __version__

ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
HEADERS = "OTEL_EXPORTER_OTLP_HEADERS"


class CountingExporter(OTLPSpanExporter):
    """The OTLP exporter, counting the batches the backend refused (the CLI says so on stderr)."""

    refused = 0

    def export(self, spans):
        result = super().export(spans)
        if result is not SpanExportResult.SUCCESS:
            CountingExporter.refused += 1
        return result


def provider() -> TracerProvider | None:
    endpoint = os.environ.get(ENDPOINT)
    if not endpoint or os.environ.get("HARBOR_TRACE", "on") == "off":
        return None
    headers = parse_env_headers(os.environ.get(HEADERS, ""), liberal=True)
    if os.environ.get("HARBOR_PROJECT"):
        headers = {k: v for k, v in headers.items() if k.lower() != "projectname"}
        headers["projectName"] = os.environ["HARBOR_PROJECT"]
    CountingExporter.refused = 0
    tp = TracerProvider(resource=Resource.create({"service.name": "harbor-desk", "service.version": __version__}))
    tp.add_span_processor(BatchSpanProcessor(CountingExporter(endpoint=endpoint, headers=headers, timeout=10)))
    return tp
