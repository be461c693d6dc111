"""Threads: the traces of a project that share a ``thread_id``, read as Opik's thread endpoints read them.

Enters: a project and, for a search, Opik's thread filters, paging id and limit. Leaves:
TraceThread-shaped dicts (``POST traces/threads/search`` streams them, ``POST
traces/threads/retrieve`` answers one, ``GET traces/threads`` pages them), or a 400/404.

As in Opik's TraceThreadDAO: a thread's start is its earliest trace start, its end the
latest trace end, its duration the difference in milliseconds; its first message is the
input of its earliest trace, its last message the output of the trace that ended last;
``number_of_messages`` is twice its trace count; usage and cost are its traces' spans'.
``thread_model_id`` is a UUIDv7 made of the thread's first trace time and its project and
id, stable across reads; threads page by it, newest first. A thread's ``status`` and
``feedback_scores`` come from :mod:`thread_life`; comments and tags are not kept, and
message values come back whole (``truncate`` is ignored).
"""
from __future__ import annotations

import sqlite3
from typing import Any

from .apierror import bad_request
from . import thread_life
from .enrich import span_stats
from .filters import DATE_OPS, NUMBER_OPS, STRING_OPS, number_or_none
from .otlp import otel_id_to_uuid7, uuid7_millis
from .timeutil import duration_ms, norm_ts
from .rows import compact_json, loads

FILTER_FIELDS = {
    "id": STRING_OPS, "first_message": STRING_OPS, "last_message": STRING_OPS, "status": ("=", "!="),
    "start_time": DATE_OPS, "end_time": DATE_OPS, "duration": NUMBER_OPS, "number_of_messages": NUMBER_OPS,
    "feedback_scores": NUMBER_OPS,
}

_THREADS = """
SELECT thread_id, group_concat(id) AS ids, min(id) AS first_id, min(start_time) AS start_time,
       max(end_time) AS end_time, count(*) AS traces, min(created_at) AS created_at,
       max(created_at) AS last_created_at,
       max(last_updated_at) AS last_updated_at,
       (SELECT input FROM traces f WHERE f.project_id = t.project_id AND f.thread_id = t.thread_id
          AND f.has_base = 1{owner_f} ORDER BY f.start_time ASC, f.id ASC LIMIT 1) AS first_message,
       (SELECT output FROM traces l WHERE l.project_id = t.project_id AND l.thread_id = t.thread_id
          AND l.has_base = 1{owner_l} ORDER BY l.end_time IS NULL, l.end_time DESC, l.id DESC LIMIT 1) AS last_message
FROM traces t
WHERE project_id = ? AND has_base = 1 AND visible_at <= ? AND thread_id IS NOT NULL AND thread_id != ''{only}{owner_t}
GROUP BY thread_id
"""


def threads_of(conn: sqlite3.Connection, project_id: str, visible_before: float,
               thread_id: str | None = None, owner: str | None = None) -> list[dict]:
    """Every thread of the project (or the one named), newest thread_model_id first; with ``owner``, made of
    the traces of that unit only (a turn's read)."""
    only, args = ("", []) if thread_id is None else (" AND thread_id = ?", [thread_id])
    if owner is None:
        sql, owners = _THREADS.format(only=only, owner_f="", owner_l="", owner_t=""), []
    else:
        sql = _THREADS.format(only=only, owner_f=" AND f.owner = ?", owner_l=" AND l.owner = ?", owner_t=" AND owner = ?")
        owners = [owner, owner]
    found = conn.execute(sql, [*owners, project_id, visible_before, *args, *([owner] if owner else [])]).fetchall()
    all_ids = [trace_id for row in found for trace_id in row["ids"].split(",")]
    stats = span_stats(conn, all_ids, None) if all_ids else {}
    threads = [_thread(row, project_id, stats) for row in found]
    closed, scores = thread_life.closed_at_of(conn, project_id), thread_life.scores_by_thread(conn, project_id)
    for thread, row in zip(threads, found):
        thread["status"] = thread_life.status(closed.get(row["thread_id"]), row["last_created_at"])
        if scores.get(row["thread_id"]):
            thread["feedback_scores"] = scores[row["thread_id"]]
    return sorted(threads, key=lambda thread: thread["thread_model_id"], reverse=True)


def _thread(row: sqlite3.Row, project_id: str, stats: dict[str, dict]) -> dict:
    millis = uuid7_millis(row["first_id"])
    thread: dict[str, Any] = {
        "id": row["thread_id"],
        "project_id": project_id,
        "thread_model_id": otel_id_to_uuid7(f"{project_id}/{row['thread_id']}".encode(), millis),
        "start_time": row["start_time"],
        "end_time": row["end_time"],
        "duration": duration_ms(row["start_time"], row["end_time"]),
        "first_message": loads(row["first_message"]),
        "last_message": loads(row["last_message"]),
        "number_of_messages": 2 * row["traces"],
        "created_at": row["created_at"],
        "last_updated_at": row["last_updated_at"],
    }
    usage: dict[str, int] = {}
    costs = []
    for trace_id in row["ids"].split(","):
        entry = stats.get(trace_id, {})
        for key, amount in (entry.get("usage") or {}).items():
            usage[key] = usage.get(key, 0) + amount
        if "total_estimated_cost" in entry:
            costs.append(entry["total_estimated_cost"])
    if usage:
        thread["usage"] = usage
    if costs:
        thread["total_estimated_cost"] = sum(costs)
    return {key: value for key, value in thread.items() if value is not None}


def check_filters(filters: Any) -> list[dict]:
    """Opik's thread filters, checked; a field or operator outside the subset is a 400 naming it."""
    if filters is None:
        return []
    if not isinstance(filters, list):
        raise bad_request("filters must be a list of {field, operator, value} objects")
    for index, flt in enumerate(filters):
        where = f"filters[{index}]"
        if not isinstance(flt, dict):
            raise bad_request(f"{where} must be an object with field, operator and value")
        name, op = flt.get("field"), flt.get("operator")
        if name not in FILTER_FIELDS:
            raise bad_request(f"{where}: thread filter field {name!r} is not supported by the local trace store; "
                              f"supported fields: {', '.join(FILTER_FIELDS)}")
        if op not in FILTER_FIELDS[name]:
            raise bad_request(f"{where}: operator {op!r} is not supported for thread field {name!r}; "
                              f"supported operators: {', '.join(FILTER_FIELDS[name])}")
        if name == "feedback_scores" and (not isinstance(flt.get("key"), str) or not flt["key"]):
            raise bad_request(f"{where}: a feedback score filter needs the score name (feedback_scores.NAME)")
        if op not in ("is_empty", "is_not_empty") and not isinstance(flt.get("value"), str):
            raise bad_request(f"{where}: value must be a string for operator {op!r}")
        if name in ("start_time", "end_time"):
            flt["value"] = norm_ts(flt["value"], f"{where}: value of {name}")
        elif FILTER_FIELDS[name] is NUMBER_OPS and op not in ("is_empty", "is_not_empty"):
            if number_or_none(flt["value"]) is None:
                raise bad_request(f"{where}: value of {name} must be a number, got {flt['value']!r:.100}")
    return filters


def matches(thread: dict, filters: list[dict]) -> bool:
    return all(_matches(thread, flt) for flt in filters)


def _matches(thread: dict, flt: dict) -> bool:
    name, op, value = flt["field"], flt["operator"], flt.get("value")
    have = _score(thread, flt["key"]) if name == "feedback_scores" else thread.get(name)
    if FILTER_FIELDS[name] is NUMBER_OPS:
        if op in ("is_empty", "is_not_empty"):
            return (have is None) == (op == "is_empty")
        return have is not None and _compare(float(have), op, float(value))
    if FILTER_FIELDS[name] is DATE_OPS:
        return have is not None and _compare(have, op, value)
    text = have if isinstance(have, str) else ("" if have is None else _json_text(have))
    return _string_match(text.lower(), op, value.lower())


def _score(thread: dict, name: str) -> float | None:
    # Opik compares score names lower-cased.
    wanted = name.lower()
    return next((s["value"] for s in thread.get("feedback_scores", ()) if s["name"].lower() == wanted), None)


def _json_text(value: Any) -> str:
    import json

    return compact_json(value)


def _compare(have: Any, op: str, want: Any) -> bool:
    return {"=": have == want, "!=": have != want, ">": have > want, ">=": have >= want,
            "<": have < want, "<=": have <= want}[op]


def _string_match(text: str, op: str, needle: str) -> bool:
    if op == "contains":
        return needle in text
    if op == "not_contains":
        return needle not in text
    if op == "starts_with":
        return text.startswith(needle)
    if op == "ends_with":
        return text.endswith(needle)
    return _compare(text, op, needle)
