"""OTLP/HTTP trace bodies off the wire, and the Opik trace ids their OTel trace ids are given.

Enters: the raw body of ``POST /api/v1/private/otel/v1/traces`` and its media type
(``application/x-protobuf`` or ``application/json``). Leaves: an
``ExportTraceServiceRequest`` decoded by the ``opentelemetry-proto`` package, the answer
body in the same encoding, or a 400 naming what is wrong with the body.

OTLP/JSON spells trace and span ids in hex (the OTLP specification), while protobuf's own
JSON mapping reads ``bytes`` fields as base64; a hex id of the right length is turned into
base64 before the message is parsed, so both spellings are read. Fields this version of the
protocol does not know are ignored, as the specification asks of a receiver.

Ids follow Opik's backend (``OpenTelemetryMapper.convertOtelIdToUUIDv7``): an Opik id is a
UUIDv7 whose 48-bit time is a millisecond stamp and whose other 80 bits are the first ten
bytes of the SHA-256 of the OTel id. A trace's stamp is the earliest span start of the
first export that named the OTel trace; a span's stamp is its trace's. The store keeps each
choice, per project and OTel trace, and keeps them apart from other OTel traces and projects
(:mod:`otlp_ids`), so spans of one trace exported in several batches land in one Opik trace.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import uuid
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from .apierror import ApiError, bad_request
from .bodies import decode_json
from .otlp_rules import names_integration

PROTOBUF_TYPE = "application/x-protobuf"
JSON_TYPE = "application/json"
MEDIA_TYPES = frozenset({PROTOBUF_TYPE, JSON_TYPE})

# Hex length of each id field in OTLP/JSON.
_HEX_IDS = {"traceId": 32, "trace_id": 32, "spanId": 16, "span_id": 16, "parentSpanId": 16, "parent_span_id": 16}


def decode_request(data: bytes, media_type: str) -> ExportTraceServiceRequest:
    """The export request in ``data``; 400 when it is not a valid OTLP trace export."""
    request = ExportTraceServiceRequest()
    if media_type == PROTOBUF_TYPE:
        try:
            request.ParseFromString(data)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise bad_request(f"request body is not an OTLP ExportTraceServiceRequest in protobuf: {exc}") from None
        return request
    if media_type != JSON_TYPE:
        raise ApiError(415, f"Content-Type {media_type!r} is not accepted for OTLP traces; send "
                            f"{PROTOBUF_TYPE} or {JSON_TYPE}")
    body = decode_json(data)
    if not isinstance(body, dict):
        raise bad_request(f"request body must be a JSON object (ExportTraceServiceRequest), got {type(body).__name__}")
    _hex_ids_to_base64(body)
    try:
        json_format.ParseDict(body, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise bad_request(f"request body is not an OTLP ExportTraceServiceRequest in JSON: {exc}") from None
    return request


def answer(media_type: str) -> tuple[bytes, str]:
    """An empty ExportTraceServiceResponse (every span accepted) in the request's encoding."""
    if media_type == PROTOBUF_TYPE:
        return ExportTraceServiceResponse().SerializeToString(), PROTOBUF_TYPE
    return b"{}", JSON_TYPE


def _hex_ids_to_base64(body: dict) -> None:
    """Rewrite the hex ids of spans and links, in place, as the base64 protobuf's JSON reader wants."""
    for resource_spans in _dicts(body.get("resourceSpans", body.get("resource_spans"))):
        for scope_spans in _dicts(resource_spans.get("scopeSpans", resource_spans.get("scope_spans"))):
            for span in _dicts(scope_spans.get("spans")):
                _rewrite_ids(span)
                for link in _dicts(span.get("links")):
                    _rewrite_ids(link)


def _dicts(value: Any) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _rewrite_ids(node: dict) -> None:
    for key, length in _HEX_IDS.items():
        value = node.get(key)
        if isinstance(value, str) and len(value) == length:
            try:
                node[key] = base64.b64encode(binascii.unhexlify(value)).decode("ascii")
            except (binascii.Error, ValueError):
                pass  # not hex: left for the reader as base64


# --- ids ----------------------------------------------------------------------------------


def otel_id_to_uuid7(otel_id: bytes, millis: int) -> str:
    """Opik's UUIDv7 for an OTel trace or span id at ``millis``."""
    digest = hashlib.sha256(otel_id).digest()
    raw = bytearray((millis & ((1 << 48) - 1)).to_bytes(6, "big") + digest[:10])
    raw[6] = (raw[6] & 0x0F) | 0x70
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def uuid7_millis(value: str) -> int:
    return uuid.UUID(value).int >> 80


def iter_spans(request: ExportTraceServiceRequest) -> list:
    return [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]


def integration_name(request: ExportTraceServiceRequest) -> str | None:
    """The first instrumentation scope of the batch that names an integration (logfire does not)."""
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            if names_integration(scope.scope.name):
                return scope.scope.name
    return None


def to_text(value: Any) -> str:
    """A JSON value as Jackson's ``asText`` gives it: a string as is, other scalars in JSON form."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (dict, list)):
        return ""
    return json.dumps(value)


def extract_cost(value: Any) -> float | None:
    """Opik's ``extractCost``: a finite number, or text spelling one; None otherwise."""
    kind = value.WhichOneof("value")
    try:
        number = {"double_value": lambda: value.double_value, "int_value": lambda: value.int_value,
                  "string_value": lambda: float(value.string_value.strip())}[kind]()
    except (KeyError, ValueError):
        return None
    return number if math.isfinite(number) else None


def extract_tags(value: Any) -> list[str]:
    """Opik's ``extractTags``: a JSON array of strings, a comma-separated string, or an array value."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        items = [item.string_value for item in value.array_value.values if item.WhichOneof("value") == "string_value"]
        return [tag.strip() for tag in items if tag.strip()]
    if kind != "string_value":
        return []
    text = value.string_value
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, list):
            return [item.strip() for item in parsed if isinstance(item, str) and item.strip()]
    return [tag.strip() for tag in text.split(",") if tag.strip()]
