"""The harness's searches of the trace backend: whole values, bounded in time.

Enters: a backend, an Opik filter string and the time range a turn's trace was created in.
Leaves: traces and spans as plain dicts, as the backend stores them; an input, output, metadata or
error_info nested deeper than ``jsonwalk.MAX_DEPTH`` levels is cut there, with a line saying so, so that
every later step can walk, print and store it.

Every search asks ``truncate: false``: without it Opik cuts an input or output of 10,001
bytes or more to a string prefix, and the rules would judge that prefix. A trace search
carries ``from_time`` / ``to_time``, which Opik turns into a range of (time-ordered) ids, so
that it reads the few traces created around the turn instead of scanning the whole project:
its cost does not grow with the project. A search in a project that does not exist (yet) is
Opik's 404; :func:`is_project_missing` tells it apart from other errors.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from ..base.jsonwalk import bounded
from .backend import Backend, client

PAGE_SIZE = 50
MAX_SPANS = 10_000


PAYLOADS = ("input", "output", "metadata")
BOUNDED = (*PAYLOADS, "error_info")


def as_dict(obj: Any) -> dict:
    """A TracePublic/SpanPublic (or plain dict) as JSON-ready data, its values bounded in depth.

    pydantic refuses to serialise a value nested deeper than its limit (a few hundred levels);
    the payloads, already plain JSON values as the SDK parsed them, are then taken as they are.
    """
    if isinstance(obj, dict):
        out = obj
    else:
        try:
            out = obj.model_dump(mode="json")
        except ValueError:  # PydanticSerializationError: "Maximum serialization depth exceeded"
            out = obj.model_dump(mode="json", exclude=set(PAYLOADS))
            out.update({k: getattr(obj, k, None) for k in PAYLOADS if k in type(obj).model_fields})
    cut = {k: bounded(out[k]) for k in BOUNDED if isinstance(out.get(k), (dict, list))}
    return {**out, **cut} if any(cut[k] is not out[k] for k in cut) else out


def is_project_missing(exc: BaseException) -> bool:
    """Opik's answer to a search in a project nobody wrote to: 404 "Project name: X not found"."""
    if getattr(exc, "status_code", None) != 404:
        return False
    body = getattr(exc, "body", None)
    text = str(body.get("message") or body.get("errors") or "") if isinstance(body, dict) else str(body or "")
    return text.startswith(("Project name:", "Project id:", "['Project name:", "['Project id:")) and "not found" in text


def search_traces(backend: Backend, filter_string: str | None, *, limit: int, from_time: datetime | None = None,
                  to_time: datetime | None = None) -> list[dict]:
    """The traces of the backend's project that match, newest first, created between the two times."""
    rest = client(backend).rest_client  # first: it imports the SDK once, also against the warm-up thread
    from opik.api_objects import helpers, rest_helpers, rest_stream_parser
    from opik.rest_api.types import trace_filter_public, trace_public

    filters = helpers.parse_filter_expressions(filter_string, parsed_item_class=trace_filter_public.TraceFilterPublic,
                                               entity_type="traces")
    bounds = {k: v for k, v in (("from_time", from_time), ("to_time", to_time)) if v is not None}

    def page(size: int, last_id: str | None) -> list[bytes]:
        return rest_helpers.ensure_rest_api_call_respecting_rate_limit(
            operation_name="search_traces",
            rest_callable=lambda: list(rest.traces.search_traces(
                project_name=backend.project, filters=filters, limit=size, truncate=False,
                last_retrieved_id=last_id, **bounds)),
        )

    found = rest_stream_parser.read_and_parse_full_stream(
        read_source=page, parsed_item_class=trace_public.TracePublic, max_results=limit,
        max_endpoint_batch_size=PAGE_SIZE)
    return [as_dict(t) for t in found]


def search_spans(backend: Backend, trace_id: str) -> list[dict]:
    """Every span of one trace, with whole inputs and outputs."""
    found = client(backend).search_spans(project_name=backend.project, trace_id=trace_id, max_results=MAX_SPANS,
                                         truncate=False)
    return [as_dict(s) for s in found]


def newest_trace_id(backend: Backend) -> str | None:
    """The id of the newest trace of the backend's project; None when it has none (or does not exist)."""
    try:
        found = client(backend).search_traces(project_name=backend.project, max_results=1, truncate=False,
                                              exclude=["input", "output", "metadata"])
    except Exception as exc:  # the SDK raises many types; only a missing project means "none"
        if is_project_missing(exc):
            return None
        raise
    return found[0].id if found else None
