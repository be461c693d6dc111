"""Request bodies of the Opik REST API: checked for shape and normalised.

Enters: decoded JSON bodies of writes, updates and searches. Leaves: docs, patches and
:class:`SearchRequest` values, or a 400 naming the field and what was expected.

A write becomes a *doc*: a dict of the entity's own fields with timestamps in the fixed
UTC form of :mod:`timeutil`, JSON fields as Python values, and every other field the
SDK may send under ``extra``. A bad body raises an :class:`ApiError` (400) whose message
names the field and what was expected.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .apierror import bad_request
from .timeutil import DEFAULT_PROJECT, norm_ts, parse_ts, parse_uuid, uuid7_bound

MAX_BATCH_ITEMS = 1000
# Opik's TraceSearchStreamRequest / SpanSearchStreamRequest: limit default 500, @Max(2000).
DEFAULT_SEARCH_LIMIT = 500
MAX_SEARCH_LIMIT = 2000
MAX_FILTERS = 100


@dataclass(frozen=True)
class Kind:
    """What differs between traces and spans."""

    name: str
    plural: str
    own_fields: tuple[str, ...]
    extra_fields: tuple[str, ...]
    update_fields: tuple[str, ...]
    exclude_names: frozenset[str]


TRACE = Kind(
    name="trace",
    plural="traces",
    own_fields=("thread_id",),
    extra_fields=("ttft", "source", "environment"),
    update_fields=(
        "name", "end_time", "input", "output", "metadata", "tags", "tags_to_add",
        "tags_to_remove", "error_info", "thread_id", "ttft", "source", "environment",
    ),
    exclude_names=frozenset({
        "name", "start_time", "end_time", "input", "output", "metadata", "tags",
        "error_info", "usage", "created_at", "created_by", "last_updated_by",
        "feedback_scores", "span_feedback_scores", "comments", "guardrails_validations",
        "total_estimated_cost", "span_count", "llm_span_count", "has_tool_spans",
        "duration", "ttft", "thread_id", "visibility_mode", "providers", "experiment",
        "annotation_queues", "source", "environment",
    }),
)

SPAN = Kind(
    name="span",
    plural="spans",
    own_fields=("trace_id", "parent_span_id", "type"),
    extra_fields=(
        "model", "provider", "usage", "total_estimated_cost",
        "total_estimated_cost_version", "ttft", "source", "environment",
    ),
    update_fields=(
        "trace_id", "parent_span_id", "name", "type", "end_time", "input", "output",
        "metadata", "model", "provider", "tags", "tags_to_add", "tags_to_remove", "usage",
        "total_estimated_cost", "error_info", "ttft", "source", "environment",
    ),
    exclude_names=frozenset({
        "name", "type", "start_time", "end_time", "input", "output", "metadata", "model",
        "provider", "tags", "usage", "error_info", "created_at", "created_by",
        "last_updated_by", "feedback_scores", "comments", "total_estimated_cost",
        "total_estimated_cost_version", "duration", "ttft", "source", "environment",
    }),
)

SPAN_TYPES = ("general", "tool", "llm", "guardrail")


# --- field checks -------------------------------------------------------------------


def _str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise bad_request(f"{what} must be a string, got {type(value).__name__}")


def _json_list_string(value: Any, what: str) -> Any:
    """Opik's JsonListString: an object, a list of objects, or a string."""
    if value is None or isinstance(value, (dict, str)):
        return value
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value
    raise bad_request(f"{what} must be a JSON object, a list of objects or a string, got {type(value).__name__}")


def _tags(value: Any, what: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise bad_request(f"{what} must be a list of strings")
    # Opik keeps a tag of any length and any number of tags: refusing one would lose its whole batch.
    return list(dict.fromkeys(value))


def _error_info(value: Any, what: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request(f"{what} must be an object with exception_type and traceback")
    for key in ("exception_type", "traceback"):
        if not isinstance(value.get(key), str):
            raise bad_request(f"{what}.{key} is required and must be a string")
    if value.get("message") is not None and not isinstance(value["message"], str):
        raise bad_request(f"{what}.message must be a string")
    return {k: v for k, v in value.items() if v is not None}


def _number(value: Any, what: str) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_request(f"{what} must be a number, got {type(value).__name__}")
    return value


def _usage(value: Any, what: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63
        for k, v in value.items()
    ):
        raise bad_request(f"{what} must be an object of integer counts (64-bit)")
    return value


def _span_type(value: Any, what: str) -> str | None:
    value = _str(value, what)
    if value is not None and value not in SPAN_TYPES:
        raise bad_request(f"{what} must be one of {', '.join(SPAN_TYPES)}, got {value!r}")
    return value


_CHECKS = {
    "name": _str,
    "thread_id": _str,
    "input": _json_list_string,
    "output": _json_list_string,
    "metadata": _json_list_string,
    "tags": _tags,
    "tags_to_add": _tags,
    "tags_to_remove": _tags,
    "error_info": _error_info,
    "ttft": _number,
    "source": _str,
    "environment": _str,
    "model": _str,
    "provider": _str,
    "usage": _usage,
    "total_estimated_cost": _number,
    "total_estimated_cost_version": _str,
    "type": _span_type,
    "end_time": lambda v, what: None if v is None else norm_ts(v, what),
    "parent_span_id": lambda v, what: None if v is None else parse_uuid(v, what),
    "trace_id": lambda v, what: None if v is None else parse_uuid(v, what),
}


def _object(body: Any, what: str) -> dict:
    if not isinstance(body, dict):
        raise bad_request(f"{what} must be a JSON object, got {type(body).__name__}")
    return body


# --- writes -----------------------------------------------------------------------------


def parse_batch(body: Any, kind: Kind) -> list[dict]:
    """``{"traces": [TraceWrite, ...]}`` (or spans) as a list of docs."""
    body = _object(body, "request body")
    items = body.get(kind.plural)
    if not isinstance(items, list):
        raise bad_request(f"request body must have a list under {kind.plural!r}")
    if not 1 <= len(items) <= MAX_BATCH_ITEMS:
        raise bad_request(f"{kind.plural} must hold 1 to {MAX_BATCH_ITEMS} items, got {len(items)}")
    return [parse_write(item, kind, f"{kind.plural}[{i}]") for i, item in enumerate(items)]


def parse_write(item: Any, kind: Kind, what: str) -> dict:
    """One TraceWrite / SpanWrite as a doc; the id is left as None when the item has none."""
    item = _object(item, what)
    if item.get("start_time") is None:
        raise bad_request(f"{what}.start_time is required")
    doc: dict[str, Any] = {
        "id": None if item.get("id") is None else parse_uuid(item["id"], f"{what}.id", version7=True),
        "project_name": _str(item.get("project_name"), f"{what}.project_name") or DEFAULT_PROJECT,
        "start_time": norm_ts(item["start_time"], f"{what}.start_time"),
        "last_updated_at": None
        if item.get("last_updated_at") is None
        else norm_ts(item["last_updated_at"], f"{what}.last_updated_at"),
    }
    for name in ("name", "end_time", "input", "output", "metadata", "tags", "error_info", *kind.own_fields):
        value = item.get(name)  # every check takes an absent value as absent
        doc[name] = None if value is None else _CHECKS[name](value, f"{what}.{name}")
    doc["extra"] = {
        name: checked
        for name in kind.extra_fields
        if (value := item.get(name)) is not None and (checked := _CHECKS[name](value, f"{what}.{name}")) is not None
    }
    if kind is SPAN:
        if doc["trace_id"] is None:
            raise bad_request(f"{what}.trace_id is required: every span belongs to a trace")
        doc["type"] = doc["type"] or "general"
    return doc


def parse_update(body: Any, kind: Kind) -> dict:
    """A TraceUpdate / SpanUpdate: only the fields it sets (non-null), plus its project."""
    body = _object(body, "request body")
    if kind is SPAN and not isinstance(body.get("trace_id"), str):
        raise bad_request("request body.trace_id is required for a span update and must be a UUID string")
    patch = {
        name: checked
        for name in kind.update_fields
        if (checked := _CHECKS[name](body.get(name), f"request body.{name}")) is not None
    }
    project_name = _str(body.get("project_name"), "request body.project_name")
    project_id = body.get("project_id")
    if project_id is not None:
        project_id = parse_uuid(project_id, "request body.project_id")
    return {"patch": patch, "project_name": project_name, "project_id": project_id}


def _empty(value: Any) -> bool:
    return value is None or value in ("", [], {})


def first_non_empty(stored: dict, incoming: dict) -> dict:
    """``incoming`` with every field the ``stored`` doc already holds a non-empty value for kept from it."""
    out = dict(incoming)
    for name, value in stored.items():
        if name in ("id", "extra") or _empty(value):
            continue
        out[name] = value
    extra = dict(incoming.get("extra") or {})
    extra.update({name: value for name, value in (stored.get("extra") or {}).items() if not _empty(value)})
    out["extra"] = extra
    return out


def merge_patches(old: dict | None, new: dict) -> dict:
    """The patch equal to applying ``old`` and then ``new``."""
    merged = dict(old or {})
    for name, value in new.items():
        if name == "tags":
            merged["tags"] = value
            merged.pop("tags_to_add", None)
            merged.pop("tags_to_remove", None)
        elif name == "tags_to_add":
            merged["tags_to_add"] = list(dict.fromkeys([*merged.get("tags_to_add", []), *value]))
            merged["tags_to_remove"] = [t for t in merged.get("tags_to_remove", []) if t not in value]
        elif name == "tags_to_remove":
            merged["tags_to_remove"] = list(dict.fromkeys([*merged.get("tags_to_remove", []), *value]))
            merged["tags_to_add"] = [t for t in merged.get("tags_to_add", []) if t not in value]
        else:
            merged[name] = value
    return merged


def apply_patch(doc: dict, patch: dict | None, kind: Kind) -> dict:
    """``doc`` with the fields of ``patch`` laid over it (tags added and removed)."""
    if not patch:
        return doc
    result = dict(doc)
    result["extra"] = dict(doc.get("extra") or {})
    for name, value in patch.items():
        if name in ("tags_to_add", "tags_to_remove"):
            continue
        if name in kind.extra_fields:
            result["extra"][name] = value
        else:
            result[name] = value
    if "tags_to_add" in patch or "tags_to_remove" in patch:
        tags = list(result.get("tags") or [])
        tags.extend(t for t in patch.get("tags_to_add", []) if t not in tags)
        removed = set(patch.get("tags_to_remove", []))
        result["tags"] = [t for t in tags if t not in removed]
    return result


# --- searches ---------------------------------------------------------------------------


@dataclass
class SearchRequest:
    project_name: str | None
    project_id: str | None
    filters: list[dict] = field(default_factory=list)
    last_retrieved_id: str | None = None
    limit: int = DEFAULT_SEARCH_LIMIT
    exclude: frozenset[str] = frozenset()
    trace_id: str | None = None
    span_type: str | None = None
    truncate: bool = True
    """Opik's default: input and output over its threshold come back cut, as a string."""
    min_id: str | None = None
    max_id: str | None = None
    """``from_time`` / ``to_time`` as the id range of entities created then (ids are UUIDv7)."""


def _time_bounds(body: dict) -> tuple[str | None, str | None]:
    """Opik's from_time / to_time, mapped to UUIDv7 id bounds as its InstantToUUIDMapper does."""
    start = None if body.get("from_time") is None else parse_ts(body["from_time"], "from_time")
    end = None if body.get("to_time") is None else parse_ts(body["to_time"], "to_time")
    if start is not None and end is not None and end <= start:
        raise bad_request(f"to_time must be after from_time, got from_time {body['from_time']!r:.60} and "
                          f"to_time {body['to_time']!r:.60}")
    return (None if start is None else uuid7_bound(start, upper=False),
            None if end is None else uuid7_bound(end, upper=True))


def parse_search(body: Any, kind: Kind) -> SearchRequest:
    body = _object(body, "request body")
    min_id, max_id = _time_bounds(body)
    project_name = _str(body.get("project_name"), "project_name")
    project_id = body.get("project_id")
    if project_id is not None:
        project_id = parse_uuid(project_id, "project_id")
    filters = body.get("filters")
    if filters is None:
        filters = []
    if not isinstance(filters, list) or not all(isinstance(f, dict) for f in filters):
        raise bad_request("filters must be a list of objects {field, operator, key, value}")
    if len(filters) > MAX_FILTERS:
        raise bad_request(f"a search takes at most {MAX_FILTERS} filters, got {len(filters)}")
    limit = body.get("limit")
    if limit is None:
        limit = DEFAULT_SEARCH_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        shown = repr(limit) if not isinstance(limit, int) or abs(limit) < 10**12 else "a larger number"
        raise bad_request(f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT} (Opik streams at most "
                          f"{MAX_SEARCH_LIMIT:,} rows per search; page on with last_retrieved_id), got {shown}")
    last_id = body.get("last_retrieved_id")
    if last_id is not None:
        last_id = parse_uuid(last_id, "last_retrieved_id")
    for flag in ("truncate", "strip_attachments"):
        if body.get(flag) is not None and not isinstance(body[flag], bool):
            raise bad_request(f"{flag} must be true or false")
    exclude = body.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(name, str) for name in exclude):
        raise bad_request("exclude must be a list of field names")
    unknown = sorted(set(exclude) - kind.exclude_names)
    if unknown:
        raise bad_request(
            f"exclude names unknown {kind.name} field(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(kind.exclude_names))}"
        )
    request = SearchRequest(
        project_name=project_name,
        project_id=project_id,
        filters=filters,
        last_retrieved_id=last_id,
        limit=limit,
        exclude=frozenset(exclude),
        truncate=body.get("truncate") is not False,
        min_id=min_id,
        max_id=max_id,
    )
    if kind is SPAN:
        trace_id = body.get("trace_id")
        request.trace_id = None if trace_id is None else parse_uuid(trace_id, "trace_id")
        request.span_type = _span_type(body.get("type"), "type")
    return request
