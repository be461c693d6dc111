"""SQLite storage of traces and spans.

Each entity is one row holding its *effective* state: the winning create (by
``last_updated_at``; on a tie, or when either side lacks one, the later arrival wins)
with every PATCH received for it laid over. The PATCH fields are also kept on the row,
so that a create arriving after a PATCH (Opik accepts that order) does not lose them.
A row made by a PATCH alone has no start time; it stays out of reads until its create
arrives.

Tags live in a side table of lower-cased values so that a tag search reads a few
thousand short strings instead of every row's JSON.
"""
from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .apierror import not_found
from .filters import build_where
from .payloads import SPAN, TRACE, Kind, SearchRequest, apply_patch, merge_patches
from .timeutil import DEFAULT_PROJECT, duration_ms, new_uuid7, now_ts, project_id_for

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    project_name TEXT,
    has_base INTEGER NOT NULL,
    base_lu TEXT,
    patch TEXT,
    name TEXT,
    name_lc TEXT,
    start_time TEXT,
    end_time TEXT,
    input TEXT,
    output TEXT,
    metadata TEXT,
    tags TEXT,
    error_info TEXT,
    thread_id TEXT,
    thread_id_lc TEXT,
    extra TEXT,
    created_at TEXT NOT NULL,
    last_updated_at TEXT NOT NULL,
    visible_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS traces_by_project ON traces (project_id, id);
CREATE INDEX IF NOT EXISTS traces_by_start ON traces (project_id, start_time);
CREATE INDEX IF NOT EXISTS traces_by_thread ON traces (project_id, thread_id_lc);

CREATE TABLE IF NOT EXISTS spans (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    project_name TEXT,
    has_base INTEGER NOT NULL,
    base_lu TEXT,
    patch TEXT,
    trace_id TEXT,
    parent_span_id TEXT,
    type TEXT,
    name TEXT,
    name_lc TEXT,
    start_time TEXT,
    end_time TEXT,
    input TEXT,
    output TEXT,
    metadata TEXT,
    tags TEXT,
    error_info TEXT,
    extra TEXT,
    created_at TEXT NOT NULL,
    last_updated_at TEXT NOT NULL,
    visible_at REAL NOT NULL
);
DROP INDEX IF EXISTS spans_by_trace;
CREATE INDEX IF NOT EXISTS spans_in_trace ON spans (trace_id, project_id, id);
CREATE INDEX IF NOT EXISTS spans_by_project ON spans (project_id, id);

CREATE TABLE IF NOT EXISTS trace_tags (
    owner_id TEXT NOT NULL,
    tag_lc TEXT NOT NULL,
    PRIMARY KEY (owner_id, tag_lc)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS span_tags (
    owner_id TEXT NOT NULL,
    tag_lc TEXT NOT NULL,
    PRIMARY KEY (owner_id, tag_lc)
) WITHOUT ROWID;
"""

_TABLES = {"trace": ("traces", "trace_tags"), "span": ("spans", "span_tags")}


def _dumps(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _lower(value: Any) -> str | None:
    return None if value is None else str(value).lower()


def _newer(incoming: str | None, stored: str | None) -> bool:
    """Whether an incoming create replaces the stored one."""
    if incoming is None or stored is None:
        return True
    return incoming >= stored


class Store:
    """The database behind one trace store; safe to share between threads."""

    def __init__(self, path: Path, visibility_delay_ms: int = 0) -> None:
        self.path = Path(path)
        self.visibility_delay_s = max(0, visibility_delay_ms) / 1000.0
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connection() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} was written by a newer trace store (schema {version}, "
                    f"this one reads {SCHEMA_VERSION}); use a different store directory"
                )
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # --- connections --------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.create_function("py_lower", 1, _lower, deterministic=True)
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        finally:
            self._idle.put(conn)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock, self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    # --- rows -----------------------------------------------------------------------------

    def _save(self, conn: sqlite3.Connection, kind: Kind, doc: dict, meta: dict) -> None:
        table, tags_table = _TABLES[kind.name]
        tags = doc.get("tags")
        row = {
            **meta,
            "id": doc["id"],
            "name": doc.get("name"),
            "name_lc": _lower(doc.get("name")),
            "start_time": doc.get("start_time"),
            "end_time": doc.get("end_time"),
            "input": _dumps(doc.get("input")),
            "output": _dumps(doc.get("output")),
            "metadata": _dumps(doc.get("metadata")),
            "tags": _dumps(tags),
            "error_info": _dumps(doc.get("error_info")),
            "extra": _dumps(doc.get("extra") or None),
        }
        if kind is SPAN:
            row.update(trace_id=doc.get("trace_id"), parent_span_id=doc.get("parent_span_id"), type=doc.get("type"))
        else:
            row.update(thread_id=doc.get("thread_id"), thread_id_lc=_lower(doc.get("thread_id")))
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({marks})", list(row.values()))
        conn.execute(f"DELETE FROM {tags_table} WHERE owner_id = ?", (doc["id"],))
        if tags:
            conn.executemany(
                f"INSERT OR IGNORE INTO {tags_table} (owner_id, tag_lc) VALUES (?, ?)",
                [(doc["id"], tag.lower()) for tag in tags],
            )

    @staticmethod
    def _doc_from_row(row: sqlite3.Row, kind: Kind) -> dict:
        doc = {
            "id": row["id"],
            "name": row["name"],
            "start_time": row["start_time"],
            "end_time": row["end_time"],
            "input": _loads(row["input"]),
            "output": _loads(row["output"]),
            "metadata": _loads(row["metadata"]),
            "tags": _loads(row["tags"]),
            "error_info": _loads(row["error_info"]),
            "extra": _loads(row["extra"]) or {},
        }
        for name in kind.own_fields:
            doc[name] = row[name]
        return doc

    def write(self, kind: Kind, docs: list[dict]) -> None:
        """Store a batch of creates; for each id the newer copy is kept."""
        table, _ = _TABLES[kind.name]
        now = now_ts()
        visible_at = time.time() + self.visibility_delay_s
        with self._transaction() as conn:
            for doc in docs:
                if doc["id"] is None:
                    doc["id"] = new_uuid7()
                old = conn.execute(
                    f"SELECT has_base, base_lu, patch, created_at, visible_at FROM {table} WHERE id = ?",
                    (doc["id"],),
                ).fetchone()
                if old is not None and old["has_base"] and not _newer(doc["last_updated_at"], old["base_lu"]):
                    continue
                patch_text = old["patch"] if old is not None else None
                effective = apply_patch(doc, _loads(patch_text), kind)
                self._save(conn, kind, effective, {
                    "project_id": project_id_for(doc["project_name"]),
                    "project_name": doc["project_name"],
                    "has_base": 1,
                    "base_lu": doc["last_updated_at"],
                    "patch": patch_text,
                    "created_at": old["created_at"] if old is not None else now,
                    "last_updated_at": doc["last_updated_at"] or now,
                    "visible_at": old["visible_at"] if old is not None else visible_at,
                })

    def update(self, kind: Kind, entity_id: str, update: dict) -> None:
        """Apply a PATCH; one for an id not seen yet is kept until its create arrives."""
        table, _ = _TABLES[kind.name]
        now = now_ts()
        patch = update["patch"]
        with self._transaction() as conn:
            old = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (entity_id,)).fetchone()
            if old is None:
                project_name = update["project_name"]
                if project_name is None and update["project_id"] is None:
                    project_name = DEFAULT_PROJECT
                empty = {"id": entity_id, "extra": {}}
                self._save(conn, kind, apply_patch(empty, patch, kind), {
                    "project_id": project_id_for(project_name) if project_name else update["project_id"],
                    "project_name": project_name,
                    "has_base": 0,
                    "base_lu": None,
                    "patch": _dumps(patch),
                    "created_at": now,
                    "last_updated_at": now,
                    "visible_at": time.time() + self.visibility_delay_s,
                })
                return
            effective = apply_patch(self._doc_from_row(old, kind), patch, kind)
            self._save(conn, kind, effective, {
                "project_id": old["project_id"],
                "project_name": old["project_name"],
                "has_base": old["has_base"],
                "base_lu": old["base_lu"],
                "patch": _dumps(merge_patches(_loads(old["patch"]), patch)),
                "created_at": old["created_at"],
                "last_updated_at": max(now, old["last_updated_at"]),
                "visible_at": old["visible_at"],
            })

    # --- reads ---------------------------------------------------------------------------

    @staticmethod
    def _public(row: sqlite3.Row, kind: Kind, exclude: frozenset[str] = frozenset()) -> dict:
        """The row as Opik's TracePublic / SpanPublic JSON (null fields left out)."""
        out: dict[str, Any] = {"id": row["id"], "project_id": row["project_id"]}
        if kind is SPAN:
            out.update(trace_id=row["trace_id"], parent_span_id=row["parent_span_id"], type=row["type"])
        out.update(
            name=row["name"],
            start_time=row["start_time"],
            end_time=row["end_time"],
            input=_loads(row["input"]),
            output=_loads(row["output"]),
            metadata=_loads(row["metadata"]),
            tags=_loads(row["tags"]),
            error_info=_loads(row["error_info"]),
        )
        if kind is TRACE:
            out["thread_id"] = row["thread_id"]
        out.update(_loads(row["extra"]) or {})
        out.update(
            created_at=row["created_at"],
            last_updated_at=row["last_updated_at"],
            duration=duration_ms(row["start_time"], row["end_time"]),
        )
        return {k: v for k, v in out.items() if v is not None and k not in exclude}

    def get(self, kind: Kind, entity_id: str) -> dict:
        table, _ = _TABLES[kind.name]
        with self._connection() as conn:
            row = conn.execute(f"SELECT * FROM {table} WHERE id = ? AND has_base = 1", (entity_id,)).fetchone()
        if row is None:
            raise not_found(f"{kind.name} {entity_id} not found")
        return self._public(row, kind)

    def search(self, kind: Kind, request: SearchRequest) -> list[dict]:
        """Matching entities, newest id first, after ``last_retrieved_id``."""
        table, tags_table = _TABLES[kind.name]
        if request.project_name:
            project_id = project_id_for(request.project_name)
        else:
            project_id = request.project_id or project_id_for(DEFAULT_PROJECT)
        clauses = ["project_id = ?", "has_base = 1", "visible_at <= ?"]
        params: list[Any] = [project_id, time.time()]
        if request.trace_id is not None:
            clauses.append("trace_id = ?")
            params.append(request.trace_id)
        if request.span_type is not None:
            clauses.append("type = ?")
            params.append(request.span_type)
        if request.last_retrieved_id is not None:
            clauses.append("id < ?")
            params.append(request.last_retrieved_id)
        filter_clauses, filter_params = build_where(request.filters, kind, tags_table)
        clauses.extend(filter_clauses)
        params.extend(filter_params)
        sql = f"SELECT * FROM {table} WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT ?"
        params.append(request.limit)
        with self._connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [self._public(row, kind, request.exclude) for row in rows]

    def counts(self) -> dict[str, int]:
        with self._connection() as conn:
            return {
                "traces": conn.execute("SELECT count(*) FROM traces WHERE has_base = 1").fetchone()[0],
                "spans": conn.execute("SELECT count(*) FROM spans WHERE has_base = 1").fetchone()[0],
            }
