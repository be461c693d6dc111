"""OTel spans as Opik spans and traces, mapped as Opik's backend maps them.

Enters: a decoded ``ExportTraceServiceRequest``, the project (the ``projectName`` header)
and the Opik trace id of each OTel trace id (see :mod:`otlp`). Leaves: TraceWrite and
SpanWrite bodies, as the SDK would send them, for :func:`payloads.parse_write`.

Per span (Opik's ``OpenTelemetryMapper``): each attribute goes where the first matching
rule of :mod:`otlp_rules` sends it (input, output, metadata, model, provider, usage, cost,
tags, thread id, or nowhere), an attribute without a rule goes to input, and a rule may set
the span's type. A string value that looks like JSON (starts with ``"``, ``[`` or ``{``) is
stored parsed. Events go to ``metadata["opentelemetry.events"]``; an ``exception`` event
(the last one) or an ERROR status becomes ``error_info``. ``opik.trace_id`` /
``opik.span_id`` / ``opik.parent_span_id`` (UUIDv7) attach a span to an existing Opik
trace or span as given.

Per batch (Opik's ``OpenTelemetryService``): a span without a parent becomes its trace too
(name, times, input, output, metadata, tags, error_info, and ``thread_id`` from the thread
attribute), unless its trace id came from ``opik.trace_id``; the first such root of a trace
wins. Usage counted on a parent whose children carry usage too is dropped from the parent,
so tokens are not counted twice.
"""
from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timezone
from typing import Any

from .apierror import bad_request
from .otlp import extract_cost, extract_tags, integration_name, iter_spans, to_text
from .otlp_ids import OtelIds
from .otlp_openinference import Normalised, normalise
from .otlp_rules import (
    COST, DROP, INPUT, METADATA, MODEL, OPIK_PARENT_SPAN_ID, OPIK_SPAN_ID, OPIK_TRACE_ID, OUTPUT,
    PROVIDER, TAGS, THREAD_ID, USAGE, find_rule,
)

# The Opik whose mapping the store imitates: the release the pinned SDK belongs to, or that release with
# the OpenInference normaliser Opik has pending (:mod:`otlp_openinference`).
CURRENT, NEXT = "2.2", "next"
GENERATIONS = (CURRENT, NEXT)
STATUS_CODE_ERROR = 2
EVENTS_KEY = "opentelemetry.events"
_USAGE_KEYS = {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens"}
# gen_ai.system is the older name of the provider attribute; Opik keeps it when both are sent.
_PROVIDER_FIRST = "gen_ai.system"


def to_writes(request: Any, project: str, ids: OtelIds, generation: str = CURRENT) -> tuple[list[dict], list[dict]]:
    """(TraceWrite bodies, SpanWrite bodies) of one export, with the Opik ids :mod:`otlp_ids` gave it, mapped as
    the Opik ``generation`` maps them (:data:`GENERATIONS`)."""
    integration = integration_name(request)
    spans: list[dict] = []
    attached: set[str] = set()
    for otel_span in iter_spans(request):
        span = to_span(otel_span, ids, integration, generation)
        if span.pop("_attached"):
            attached.add(span["trace_id"])
        spans.append({**span, "project_name": project})
    _drop_parent_usage(spans)
    traces: dict[str, dict] = {}
    for span in spans:
        if span.get("parent_span_id") is None and span["trace_id"] not in attached:
            traces.setdefault(span["trace_id"], _trace_of(span))
    return list(traces.values()), spans


def to_span(otel_span: Any, ids: OtelIds, integration: str | None, generation: str = CURRENT) -> dict:
    """One OTel span as a SpanWrite body (plus ``_attached``: its trace id came from ``opik.trace_id``)."""
    otel_trace = otel_span.trace_id.hex()
    overrides = {key: _uuid7_attribute(otel_span, key) for key in (OPIK_TRACE_ID, OPIK_SPAN_ID, OPIK_PARENT_SPAN_ID)}
    trace_id = overrides[OPIK_TRACE_ID] or ids.traces[otel_trace]
    if overrides[OPIK_TRACE_ID]:
        parent = overrides[OPIK_PARENT_SPAN_ID]
    else:
        parent = ids.spans[(otel_trace, otel_span.parent_span_id.hex())] if otel_span.parent_span_id else None
    span: dict[str, Any] = {
        "id": overrides[OPIK_SPAN_ID] or ids.spans[(otel_trace, otel_span.span_id.hex())],
        "trace_id": trace_id,
        "parent_span_id": parent,
        "name": otel_span.name,
        "type": "general",
        "source": "sdk",
        "start_time": _iso(otel_span.start_time_unix_nano),
        "end_time": _iso(otel_span.end_time_unix_nano),
        "_attached": overrides[OPIK_TRACE_ID] is not None,
    }
    span.update(_attribute_fields(otel_span, integration, generation))
    error = error_info(otel_span)
    if error is not None:
        span["error_info"] = error
    return span


def _iso(nanos: int) -> str:
    millis = nanos // 1_000_000
    return datetime.fromtimestamp(millis / 1000, timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _uuid7_attribute(otel_span: Any, key: str) -> str | None:
    for attribute in otel_span.attributes:
        if attribute.key == key and attribute.value.string_value.strip():
            try:
                value = uuid.UUID(attribute.value.string_value)
            except ValueError:
                return None
            return str(value) if value.version == 7 else None
    return None


# --- attributes -------------------------------------------------------------------------


def _attribute_fields(otel_span: Any, integration: str | None, generation: str) -> dict:
    """input, output, metadata, model, provider, usage, cost, tags and type from the attributes."""
    buckets: dict[str, dict] = {INPUT: {}, OUTPUT: {}, METADATA: {}}
    if integration and integration.strip():
        buckets[METADATA]["integration"] = integration
    fields: dict[str, Any] = {}
    usage: dict[str, int] = {}
    tags: list[str] = []
    normalised = normalise(otel_span.attributes) if generation == NEXT else None
    for attribute in otel_span.attributes:
        key, value = attribute.key, attribute.value
        if normalised is not None and key in normalised.consumed:
            continue
        rule = find_rule(key)
        if rule is None:
            put_value(buckets[INPUT], key, value)
            continue
        if rule.span_type is not None:
            fields["type"] = rule.span_type
        _apply(rule.outcome, key, rule.key, value, buckets, fields, usage, tags)
    if otel_span.events:
        buckets[METADATA][EVENTS_KEY] = [_event(event) for event in otel_span.events]
    if buckets[METADATA].get("gen_ai.operation.name") == "invoke_agent":
        fields["type"] = "general"  # an agent run is not an LLM call, whatever else it carries
    fields.pop("_provider_first", None)
    if normalised is not None:
        _lay_over(normalised, buckets, fields, usage, tags)
    for bucket, values in buckets.items():
        if values:
            fields[bucket] = values
    if normalised is not None:
        for bucket, composed in ((INPUT, normalised.compose_input(buckets[INPUT])),
                                 (OUTPUT, normalised.compose_output(buckets[OUTPUT]))):
            if composed is not None:
                fields[bucket] = composed
    if usage:
        if "total_tokens" not in usage and {"prompt_tokens", "completion_tokens"} <= usage.keys():
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        fields["usage"] = usage
    if tags:
        fields["tags"] = list(dict.fromkeys(tags))
    return fields


def _lay_over(normalised: Normalised, buckets: dict, fields: dict, usage: dict, tags: list) -> None:
    """The normaliser's values over the common rules' (its input and output are composed by the caller)."""
    buckets[METADATA].update(normalised.metadata)
    if normalised.session and "thread_id" not in buckets[METADATA]:
        buckets[METADATA]["thread_id"] = normalised.session
    usage.update(normalised.usage)
    tags.extend(normalised.tags)
    for name, value in (("model", normalised.model), ("provider", normalised.provider),
                        ("total_estimated_cost", normalised.cost)):
        if value is not None:
            fields[name] = value
    fields["type"] = normalised.span_type


def _apply(outcome: str, key: str, rule_key: str, value: Any, buckets: dict, fields: dict,
           usage: dict, tags: list) -> None:
    if outcome == MODEL:
        fields["model"] = value.string_value
    elif outcome == PROVIDER:
        if key == _PROVIDER_FIRST or not fields.get("_provider_first"):
            fields["provider"] = value.string_value
            fields["_provider_first"] = key == _PROVIDER_FIRST
    elif outcome == USAGE:
        _usage(usage, key, rule_key, value)
    elif outcome == COST:
        cost = extract_cost(value)
        if cost is not None:
            fields["total_estimated_cost"] = cost
    elif outcome in (INPUT, OUTPUT, METADATA):
        put_value(buckets[outcome], key, value)
    elif outcome == TAGS:
        tags.extend(extract_tags(value))
    elif outcome == THREAD_ID:
        if "thread_id" not in buckets[METADATA]:
            put_value(buckets[METADATA], "thread_id", value)
    elif outcome != DROP:
        raise AssertionError(f"unknown outcome {outcome}")


def put_value(node: dict, key: str, value: Any) -> None:
    """Opik's ``extractToJsonColumn``: the attribute value under ``key``, JSON-looking text parsed."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        node[key] = _maybe_json(value.string_value)
    elif kind == "int_value":
        node[key] = value.int_value
    elif kind == "double_value":
        number = value.double_value
        node[key] = number if math.isfinite(number) else str(number)
    elif kind == "bool_value":
        node[key] = value.bool_value
    elif kind == "array_value":
        node[key] = [item.string_value for item in value.array_value.values]


def _maybe_json(text: str) -> Any:
    if not text.startswith(('"', "[", "{")):
        return text
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(parsed, str):
        try:
            return json.loads(parsed)
        except (ValueError, RecursionError):
            return parsed
    return parsed


def _usage(usage: dict, key: str, rule_key: str, value: Any) -> None:
    kind = value.WhichOneof("value")
    name = key[len(rule_key):]
    if kind == "int_value":
        usage[_USAGE_KEYS.get(name, name)] = _int32(value.int_value)
        return
    if kind != "string_value":
        return
    text = value.string_value
    try:
        usage[_USAGE_KEYS.get(name, name)] = _int32(int(text))
        return
    except ValueError:
        pass
    try:
        parsed = json.loads(text)
        if isinstance(parsed, str):
            parsed = json.loads(parsed)
    except (ValueError, RecursionError):
        raise bad_request(f"attribute {key!r} holds usage that is neither a number nor a JSON object: "
                          f"{text[:120]!r}") from None
    if isinstance(parsed, dict):
        for entry, count in parsed.items():
            if isinstance(count, (int, float)) and not isinstance(count, bool) and math.isfinite(count):
                usage[_USAGE_KEYS.get(entry, entry)] = _int32(int(count))


def _int32(number: int) -> int:
    """Opik keeps usage counts as Java ints: wrapped to 32 bits."""
    return (number + 2**31) % 2**32 - 2**31


def _event(event: Any) -> dict:
    node: dict[str, Any] = {"name": event.name, "time_unix_nano": event.time_unix_nano}
    if event.attributes:
        attributes: dict[str, Any] = {}
        for attribute in event.attributes:
            put_value(attributes, attribute.key, attribute.value)
        node["attributes"] = attributes
    return node


# --- errors, traces ---------------------------------------------------------------------


def error_info(otel_span: Any) -> dict | None:
    """The last ``exception`` event, else an ERROR status, as Opik's error_info; None when neither."""
    exceptions = [event for event in otel_span.events if event.name == "exception"]
    if exceptions:
        found = {attr.key: attr.value.string_value for attr in exceptions[-1].attributes}
        message = found.get("exception.message") or None
        info = {
            "exception_type": _first_text(found.get("exception.type"), "Error"),
            "traceback": _first_text(found.get("exception.stacktrace"), message, "Error"),
        }
        return {**info, "message": message} if message is not None else info
    if otel_span.status.code == STATUS_CODE_ERROR:
        message = otel_span.status.message.strip() or None
        info = {"exception_type": "Error", "traceback": message or "Error"}
        return {**info, "message": message} if message is not None else info
    return None


def _first_text(*values: str | None) -> str:
    return next(value for value in values if value is not None and value.strip())


def _drop_parent_usage(spans: list[dict]) -> None:
    parents = {span["parent_span_id"] for span in spans if span.get("parent_span_id") and span.get("usage")}
    for span in spans:
        if span["id"] in parents and span.get("usage"):
            del span["usage"]


def _trace_of(root: dict) -> dict:
    trace = {key: root[key] for key in ("name", "project_name", "start_time", "end_time", "source")}
    trace["id"] = root["trace_id"]
    for key in ("input", "output", "metadata", "tags", "error_info"):
        if root.get(key) is not None:
            trace[key] = root[key]
    thread = to_text((root.get("metadata") or {}).get("thread_id"))
    if thread.strip():
        trace["thread_id"] = thread
    return trace
