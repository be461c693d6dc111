"""One entity between its normalised doc, its SQLite row and its public JSON.

Enters: a doc from :mod:`payloads` (writes) or a row from the database (reads). Leaves:
the row written with its tag, tag-vocabulary and project side rows, or the entity as
Opik's TracePublic / SpanPublic JSON.
"""
from __future__ import annotations

import functools
import json
import math
import sqlite3
from typing import Any

from .payloads import SPAN, TRACE, Kind
from .timeutil import duration_ms
from .turnkeys import Principal

TABLES = {"trace": ("traces", "trace_tags"), "span": ("spans", "span_tags")}


# One encoder for every value: json.dumps with options builds a new one per call.
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(value: Any) -> str | None:
    if value is None:
        return None
    return compact_json(value)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class Raw(str):
    """A JSON value as the stored text, put into an answer as it is instead of being parsed and encoded again."""


def _raw(text: str | None) -> Raw | None:
    return None if text is None else Raw(text)


def parsed(value: Any) -> Any:
    """A value of :func:`public` as Python data (a :class:`Raw` one parsed)."""
    return json.loads(value) if type(value) is Raw else value


def encode(item: dict) -> str:
    """An entity of :func:`public` as compact JSON; its keys are the store's own field names."""
    return "{" + ",".join(f'"{key}":{_value_json(value)}' for key, value in item.items()) + "}"


def _value_json(value: Any) -> str:
    kind = type(value)
    if kind is Raw:
        return value
    if kind is str:
        return _string_json(value)
    if kind is int:
        return str(value)
    return compact_json(value)  # floats (their JSON spelling), booleans, lists, objects


_string_json = json.encoder.encode_basestring  # type: ignore[attr-defined]  # the C one, as ensure_ascii=False uses


def lower(value: Any) -> str | None:
    return None if value is None else str(value).lower()


def number(value: Any) -> float | None:
    """A stored value as a number, when it is one or text spelling one (SQL ``py_number``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        parsed = float(str(value))
    except (TypeError, ValueError):
        return None
    return parsed if math.isfinite(parsed) else None


def newer(incoming: str | None, stored: str | None) -> bool:
    """Whether an incoming create replaces the stored one."""
    if incoming is None or stored is None:
        return True
    return incoming >= stored


def by_ids(conn: sqlite3.Connection, table: str, ids: list[str]) -> dict[str, sqlite3.Row]:
    """The stored rows of these ids (of ``traces`` or ``spans``), by id."""
    if len(ids) == 1:
        row = conn.execute(f"SELECT * FROM {table} WHERE id = ?", ids).fetchone()
        return {} if row is None else {row["id"]: row}
    found: dict[str, sqlite3.Row] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ", ".join("?" for _ in part)
        for row in conn.execute(f"SELECT * FROM {table} WHERE id IN ({marks})", part):
            found[row["id"]] = row
    return found


def writers(old: sqlite3.Row | None, by: Principal) -> dict:
    """Who created a row (its first writer, kept) and who wrote it last (``by``)."""
    if old is None:
        return {"created_by": by.name, "last_updated_by": by.name, "owner": by.unit}
    return {"created_by": old["created_by"], "last_updated_by": by.name, "owner": old["owner"]}


@functools.lru_cache(maxsize=16)
def _insert_sql(table: str, columns: tuple[str, ...]) -> str:
    return (f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join(':' + column for column in columns)})")


def save(conn: sqlite3.Connection, kind: Kind, doc: dict, meta: dict, previous: sqlite3.Row | None = None) -> None:
    """Insert or replace the entity's row, and its tags unless the ``previous`` row has the same."""
    table, tags_table = TABLES[kind.name]
    tags = doc.get("tags")
    row = {
        **meta,
        "id": doc["id"],
        "name": doc.get("name"),
        "name_lc": lower(doc.get("name")),
        "start_time": doc.get("start_time"),
        "end_time": doc.get("end_time"),
        "input": dumps(doc.get("input")),
        "output": dumps(doc.get("output")),
        "metadata": dumps(doc.get("metadata")),
        "tags": dumps(tags),
        "error_info": dumps(doc.get("error_info")),
        "extra": dumps(doc.get("extra") or None),
    }
    if kind is SPAN:
        row.update(trace_id=doc.get("trace_id"), parent_span_id=doc.get("parent_span_id"), type=doc.get("type"))
    else:
        row.update(thread_id=doc.get("thread_id"), thread_id_lc=lower(doc.get("thread_id")))
    conn.execute(_insert_sql(table, tuple(row)), row)
    if previous is not None and previous["tags"] == row["tags"]:
        return  # the second copy of an entity (at its end) usually repeats the tags of the first
    if previous is not None:
        conn.execute(f"DELETE FROM {tags_table} WHERE owner_id = ?", (doc["id"],))
    if tags:
        lowered = list(dict.fromkeys(tag.lower() for tag in tags))
        conn.executemany(f"INSERT OR IGNORE INTO {tags_table} (owner_id, tag_lc) VALUES (?, ?)",
                         [(doc["id"], tag) for tag in lowered])
        conn.executemany("INSERT OR IGNORE INTO tag_vocab (tag_lc) VALUES (?)", [(tag,) for tag in lowered])


def note_project(conn: sqlite3.Connection, project_id: str, name: str | None, now: str, kind: Kind) -> None:
    """Record the project of a write (a PATCH without a project name leaves no trace here)."""
    if name is None:
        return
    trace_at = now if kind is TRACE else None
    conn.execute(
        "INSERT INTO projects (id, name, created_at, last_updated_at, last_updated_trace_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET last_updated_at = excluded.last_updated_at, "
        "last_updated_trace_at = coalesce(excluded.last_updated_trace_at, last_updated_trace_at)",
        (project_id, name, now, now, trace_at),
    )


def doc_from_row(row: sqlite3.Row, kind: Kind) -> dict:
    doc = {
        "id": row["id"],
        "name": row["name"],
        "start_time": row["start_time"],
        "end_time": row["end_time"],
        "input": loads(row["input"]),
        "output": loads(row["output"]),
        "metadata": loads(row["metadata"]),
        "tags": loads(row["tags"]),
        "error_info": loads(row["error_info"]),
        "extra": loads(row["extra"]) or {},
    }
    for name in kind.own_fields:
        doc[name] = row[name]
    return doc


def public(row: sqlite3.Row, kind: Kind, exclude: frozenset[str] = frozenset(), *, raw: bool = False) -> dict:
    """The row as Opik's TracePublic / SpanPublic JSON (null fields left out). With ``raw`` its JSON values
    are :class:`Raw` text (for :func:`encode`), not parsed."""
    value = _raw if raw else loads
    out: dict[str, Any] = {"id": row["id"], "project_id": row["project_id"]}
    if kind is SPAN:
        out.update(trace_id=row["trace_id"], parent_span_id=row["parent_span_id"], type=row["type"])
    out.update(
        name=row["name"],
        start_time=row["start_time"],
        end_time=row["end_time"],
        input=value(row["input"]),
        output=value(row["output"]),
        metadata=value(row["metadata"]),
        tags=value(row["tags"]),
        error_info=value(row["error_info"]),
    )
    if kind is TRACE:
        out["thread_id"] = row["thread_id"]
    if row["extra"] is not None:
        out.update(loads(row["extra"]))
    out.update(
        created_at=row["created_at"],
        last_updated_at=row["last_updated_at"],
        created_by=row["created_by"],
        last_updated_by=row["last_updated_by"],
        duration=duration_ms(row["start_time"], row["end_time"]),
    )
    return {k: v for k, v in out.items() if v is not None and k not in exclude}
