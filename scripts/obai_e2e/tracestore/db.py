"""SQLite storage of traces, spans, their feedback scores and projects.

Enters: normalised docs, patches, scores and search requests from :mod:`payloads` and
:mod:`feedback`. Leaves: Opik-shaped public JSON for reads, and rows that survive a crash
of the server once a write was answered.

Each entity is one row holding its *effective* state: the winning create (by
``last_updated_at``; on a tie, or when either side lacks one, the later arrival wins)
with every PATCH received for it laid over. The PATCH fields are also kept on the row,
so that a create arriving after a PATCH (Opik accepts that order) does not lose them.
A row made by a PATCH alone has no start time; it stays out of reads until its create
arrives.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from . import feedback, otlp_ids, ownership, rows, thread_life
from .apierror import not_found, project_not_found
from .enrich import add_derived
from .filters import build_where, has_tag_search
from .listings import Listings
from .otlp_ids import IdNeeds, OtelIds
from .payloads import SPAN, TRACE, Kind, SearchRequest, apply_patch, first_non_empty, merge_patches
from .rows import TABLES, dumps, loads, newer
from .schema import index_tags, migrate
from .threads import threads_of
from .timeutil import DEFAULT_PROJECT, new_uuid7, now_ts, project_id_for
from .truncation import slim
from .turnkeys import HARNESS, Principal


NOTE_EVERY_S = 1.0
FEW_ROWS = 200
NO_SCORES = frozenset({"feedback_scores", "span_feedback_scores"})


class _Lease:
    """A pooled connection for one ``with`` block (a class, not a generator: one of these per request)."""

    __slots__ = ("store", "write", "conn")

    def __init__(self, store: "Store", *, write: bool) -> None:
        self.store, self.write = store, write

    def __enter__(self) -> sqlite3.Connection:
        if self.write:
            self.store._write_lock.acquire()
        try:
            self.conn = self.store._take()
            if self.write:
                self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._release()
            raise
        return self.conn

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if self.write:
                if kind is None:
                    try:
                        self.conn.execute("COMMIT")
                    except BaseException:
                        self.conn.execute("ROLLBACK")  # the connection goes back with no transaction open
                        raise
                else:
                    self.conn.execute("ROLLBACK")
        finally:
            self._release()

    def _release(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            self.store._idle.append(conn)
        if self.write:
            self.store._write_lock.release()


class Store(Listings):
    """The database behind one trace store; safe to share between threads.

    ``visibility_delay_ms`` hides a new entity from searches for that long, as Opik's
    ingestion lags behind its writes; ``strict`` hides it from reads by id and from what a
    trace read derives from its spans too, as a server that has not ingested it yet would.
    """

    def __init__(self, path: Path, visibility_delay_ms: int = 0, *, strict: bool = False) -> None:
        self.path = Path(path)
        self.visibility_delay_s = max(0, visibility_delay_ms) / 1000.0
        self.strict = strict
        self._idle: list[sqlite3.Connection] = []  # the most recently used on top: its page cache is the freshest
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._write_lock = threading.Lock()
        # What the store has learnt it need not ask SQLite again (each kept only after its commit):
        self._projects: set[str] = set()  # project ids that exist
        self._noted: dict[tuple[str, bool], float] = {}  # (project id, by a trace) → when its times were last set
        self._scored: bool | None = None  # whether any feedback score was ever stored
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connection() as conn:
            migrate(conn, self.path)

    # --- connections --------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.create_function("py_lower", 1, rows.lower, deterministic=True)
        conn.create_function("py_number", 1, rows.number, deterministic=True)
        with self._all_lock:
            self._all.append(conn)
        return conn

    def _connection(self) -> "_Lease":
        """A connection of the pool for a ``with`` block (taken back at its end)."""
        return _Lease(self, write=False)

    def _transaction(self) -> "_Lease":
        """A connection in a write transaction for a ``with`` block: committed at its end, rolled back on error."""
        return _Lease(self, write=True)

    def _take(self) -> sqlite3.Connection:
        try:
            return self._idle.pop()  # atomic under the GIL
        except IndexError:
            return self._open()

    def close(self) -> None:
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    # --- writes ----------------------------------------------------------------------------

    def write(self, kind: Kind, docs: list[dict], *, first_wins: bool = False, by: Principal = HARNESS) -> None:
        """Store a batch of creates; for each id the newer copy is kept.

        ``first_wins`` (Opik's single span create): a create of an id already stored keeps each
        field's first non-empty value and takes the new one only where the stored is empty.
        ``by`` wrote the batch: a turn's key may re-post only what it created (:mod:`ownership`).
        """
        table, _ = TABLES[kind.name]
        now = now_ts()
        visible_at = time.time() + self.visibility_delay_s
        for doc in docs:
            if doc["id"] is None:
                doc["id"] = new_uuid7()
        with self._transaction() as conn:
            olds = rows.by_ids(conn, table, [doc["id"] for doc in docs])
            ownership.check_rewrite(kind, olds.values(), by, "a re-post")
            if kind is SPAN:
                ownership.check_traces(conn, (doc["trace_id"] for doc in docs), by, "a span")
            repeated = len(olds) < len(docs) and len({doc["id"] for doc in docs}) < len(docs)
            noted = [self._note_project(conn, name, now, kind) for name in dict.fromkeys(d["project_name"] for d in docs)]
            for doc in docs:
                old = rows.by_ids(conn, table, [doc["id"]]).get(doc["id"]) if repeated else olds.get(doc["id"])
                self._write_one(conn, kind, doc, old, first_wins, by, now, visible_at)
        stamp = time.monotonic()
        for key in noted:
            if key is not None:
                self._noted[key] = stamp
                self._projects.add(key[0])

    def _note_project(self, conn: sqlite3.Connection, name: str, now: str, kind: Kind) -> tuple[str, bool] | None:
        """Create the project of a write, or set its times: at most once a second per project (None when skipped;
        else the key to remember once the write committed)."""
        key = (project_id_for(name), kind is TRACE)
        last = self._noted.get(key)
        if last is not None and time.monotonic() - last < NOTE_EVERY_S:
            return None
        rows.note_project(conn, key[0], name, now, kind)
        return key

    def _write_one(self, conn: sqlite3.Connection, kind: Kind, doc: dict, old: sqlite3.Row | None,
                   first_wins: bool, by: Principal, now: str, visible_at: float) -> None:
        if first_wins and old is not None and old["has_base"]:
            doc = first_non_empty(rows.doc_from_row(old, kind), doc)
        if old is not None and old["has_base"] and not newer(doc["last_updated_at"], old["base_lu"]):
            return
        patch_text = old["patch"] if old is not None else None
        effective = apply_patch(doc, loads(patch_text), kind)
        rows.save(conn, kind, effective, {
            "project_id": project_id_for(doc["project_name"]),
            "project_name": doc["project_name"],
            "has_base": 1,
            "base_lu": doc["last_updated_at"],
            "patch": patch_text,
            "created_at": old["created_at"] if old is not None else now,
            "last_updated_at": doc["last_updated_at"] or now,
            "visible_at": old["visible_at"] if old is not None else visible_at,
            **rows.writers(old, by),
        }, old)

    def otel_ids(self, project_name: str, needs: IdNeeds) -> OtelIds:
        """The Opik ids of the OTel traces and spans an export names (:mod:`otlp_ids`)."""
        with self._transaction() as conn:
            return otlp_ids.assign(conn, project_id_for(project_name), needs)

    def update(self, kind: Kind, entity_id: str, update: dict, by: Principal = HARNESS) -> None:
        """Apply a PATCH; one for an id not seen yet is kept until its create arrives."""
        table, _ = TABLES[kind.name]
        now = now_ts()
        patch = update["patch"]
        with self._transaction() as conn:
            old = rows.by_ids(conn, table, [entity_id]).get(entity_id)
            ownership.check_rewrite(kind, [old], by, "an update")
            if kind is SPAN:
                ownership.check_traces(conn, [patch.get("trace_id"), old and old["trace_id"]], by, "a span")
            if old is None:
                project_name = update["project_name"]
                if project_name is None and update["project_id"] is None:
                    project_name = DEFAULT_PROJECT
                project_id = project_id_for(project_name) if project_name else update["project_id"]
                rows.note_project(conn, project_id, project_name, now, kind)
                empty = {"id": entity_id, "extra": {}}
                rows.save(conn, kind, apply_patch(empty, patch, kind), {
                    "project_id": project_id,
                    "project_name": project_name,
                    "has_base": 0,
                    "base_lu": None,
                    "patch": dumps(patch),
                    "created_at": now,
                    "last_updated_at": now,
                    "visible_at": time.time() + self.visibility_delay_s,
                    **rows.writers(None, by),
                })
                return
            effective = apply_patch(rows.doc_from_row(old, kind), patch, kind)
            rows.save(conn, kind, effective, {
                "project_id": old["project_id"],
                "project_name": old["project_name"],
                "has_base": old["has_base"],
                "base_lu": old["base_lu"],
                "patch": dumps(merge_patches(loads(old["patch"]), patch)),
                "created_at": old["created_at"],
                "last_updated_at": max(now, old["last_updated_at"]),
                "visible_at": old["visible_at"],
                **rows.writers(old, by),
            }, old)

    def write_scores(self, kind: Kind, scores: list[dict], by: Principal = HARNESS) -> None:
        with self._transaction() as conn:
            ownership.check_scored(conn, kind, scores, by)
            feedback.write(conn, kind, scores, now_ts(), by.name)
        self._scored = True

    def _skipped(self, conn: sqlite3.Connection, exclude: frozenset[str]) -> frozenset[str]:
        """``exclude``, and the score fields while no score was ever stored (nothing to look up)."""
        if self._scored is None:
            self._scored = conn.execute("SELECT EXISTS (SELECT 1 FROM feedback_scores)").fetchone()[0] == 1
        return exclude if self._scored else exclude | NO_SCORES

    def delete_score(self, kind: Kind, entity_id: str, name: str) -> None:
        with self._transaction() as conn:
            feedback.delete(conn, kind, entity_id, name)

    # --- reads ---------------------------------------------------------------------------

    def _visible_since(self) -> float | None:
        """Entities that arrived before this moment are visible to reads by id (strict mode)."""
        return time.time() if self.strict else None

    def get(self, kind: Kind, entity_id: str, by: Principal = HARNESS, *, raw: bool = False) -> dict:
        """One entity by id; a turn's key reads only what keys of its own unit wrote (else not found). ``raw``:
        its JSON values as stored text (:func:`rows.encode`)."""
        table, _ = TABLES[kind.name]
        visible = self._visible_since()
        with self._connection() as conn:
            row = conn.execute(f"SELECT * FROM {table} WHERE id = ? AND has_base = 1", (entity_id,)).fetchone()
            if row is None or (visible is not None and row["visible_at"] > visible) or (
                    by.is_turn and row["owner"] != by.unit):
                raise not_found(f"{kind.name} {entity_id} not found")
            item = rows.public(row, kind, raw=raw)
            return add_derived(conn, kind, [item], self._skipped(conn, frozenset()), visible)[0]

    def project_of(self, kind: Kind, entity_id: str) -> str | None:
        """The project id of an entity, or None when it is not stored."""
        table, _ = TABLES[kind.name]
        with self._connection() as conn:
            row = conn.execute(f"SELECT project_id FROM {table} WHERE id = ?", (entity_id,)).fetchone()
        return None if row is None else row["project_id"]

    def project_name_of(self, kind: Kind, entity_id: str) -> str | None:
        """The project name of an entity, or None when it is not stored."""
        table, _ = TABLES[kind.name]
        with self._connection() as conn:
            row = conn.execute(f"SELECT project_name FROM {table} WHERE id = ?", (entity_id,)).fetchone()
        return None if row is None else row["project_name"]

    def _search_project(self, conn: sqlite3.Connection, request: SearchRequest) -> str:
        """The project a search reads; one that was never written to is Opik's 404, not an empty answer."""
        name = request.project_name or (None if request.project_id else DEFAULT_PROJECT)
        project_id = project_id_for(name) if name else request.project_id
        if project_id in self._projects:
            return project_id
        if conn.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None:
            raise project_not_found(name=name, project_id=project_id)
        self._projects.add(project_id)
        return project_id

    def search(self, kind: Kind, request: SearchRequest, by: Principal = HARNESS, *, raw: bool = False) -> list[dict]:
        """Matching entities, newest id first, after ``last_retrieved_id``; a turn's key finds only what
        keys of its own unit wrote. ``raw``: JSON values as stored text (:func:`rows.encode`)."""
        table, tags_table = TABLES[kind.name]
        filter_clauses, filter_params = build_where(request.filters, kind, tags_table)  # a bad filter: 400 first
        with self._connection() as conn:
            project_id = self._search_project(conn, request)
            scan = has_tag_search(request.filters) and self._few_in_range(conn, table, project_id, request)
        if scan:
            filter_clauses, filter_params = build_where(request.filters, kind, tags_table, scan_tags=True)
        elif has_tag_search(request.filters):
            with self._transaction() as conn:
                index_tags(conn)
        now = time.time()
        clauses = ["project_id = ?", "has_base = 1", "visible_at <= ?"]
        params: list[Any] = [project_id, now]
        for bound, op in ((request.min_id, ">="), (request.max_id, "<=")):
            if bound is not None:
                clauses.append(f"id {op} ?")
                params.append(bound)
        if request.trace_id is not None:
            clauses.append("trace_id = ?")
            params.append(request.trace_id)
        if request.span_type is not None:
            clauses.append("type = ?")
            params.append(request.span_type)
        if by.is_turn:
            clauses.append("owner = ?")
            params.append(by.unit)
        if request.last_retrieved_id is not None:
            clauses.append("id < ?")
            params.append(request.last_retrieved_id)
        clauses.extend(filter_clauses)
        params.extend(filter_params)
        sql = f"SELECT * FROM {table} WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT ?"
        params.append(request.limit)
        with self._connection() as conn:
            found = conn.execute(sql, params).fetchall()
            keep_raw = raw and not request.truncate  # cutting values needs them parsed
            items = [rows.public(row, kind, request.exclude, raw=keep_raw) for row in found]
            items = add_derived(conn, kind, items, self._skipped(conn, request.exclude), now if self.strict else None)
        return [slim(item) for item in items] if request.truncate else items

    def _few_in_range(self, conn: sqlite3.Connection, table: str, project_id: str, request: SearchRequest) -> bool:
        """Whether a time-bounded search reads at most :data:`FEW_ROWS` rows (then each one's tags are tested)."""
        if request.min_id is None or request.max_id is None:
            return False
        found = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE project_id = ? AND id >= ? "
                             f"AND id <= ? LIMIT {FEW_ROWS + 1})", (project_id, request.min_id, request.max_id))
        return found.fetchone()[0] <= FEW_ROWS

    def threads(self, project_name: str | None, project_id: str | None, thread_id: str | None = None,
                by: Principal = HARNESS) -> list[dict]:
        """The project's threads (or the one named), newest first; an unknown project is Opik's 404. A turn's
        key sees the traces keys of its own unit wrote."""
        request = SearchRequest(project_name=project_name, project_id=project_id)
        with self._connection() as conn:
            found_id = self._search_project(conn, request)
            return threads_of(conn, found_id, time.time(), thread_id, owner=by.unit)

    def change_threads(self, project_name: str | None, project_id: str | None, thread_ids: list[str], action: Any,
                       by: Principal = HARNESS) -> Any:
        """``action(conn, project_id, now)`` in one write transaction, on a project that exists (else 404), when
        ``by`` may change these threads (:func:`ownership.check_threads`)."""
        with self._transaction() as conn:
            found = self._search_project(conn, SearchRequest(project_name=project_name, project_id=project_id))
            ownership.check_threads(conn, found, thread_ids, by, project_name)
            return action(conn, found, now_ts())

    def write_thread_scores(self, scores: list[dict], by: Principal = HARNESS) -> None:
        with self._transaction() as conn:
            for project_id in {score["project_id"] for score in scores}:
                mine = [score for score in scores if score["project_id"] == project_id]
                ownership.check_threads(conn, project_id, [s["thread_id"] for s in mine], by, mine[0]["project_name"])
            ownership.check_score_rows(conn, thread_life.SCORE_KIND, scores, by)
            thread_life.write_scores(conn, scores, now_ts(), by.name)
        self._scored = True

    def delete_project(self, project_id: str) -> None:
        with self._transaction() as conn:
            thread_life.delete_project(conn, project_id)
            self._projects.discard(project_id)
            for trace_write in (True, False):
                self._noted.pop((project_id, trace_write), None)
