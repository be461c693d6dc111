"""What the store lists besides searches: its counts, a project by id or name, and what the pages show.

Enters: a project id or name, a page's position in the newest traces, a trace id. Leaves: the
entity counts, Opik's ProjectPublic (or its 404), the newest traces of every project with their
project names, one trace with its first spans in start order.
"""
from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import Callable

from . import rows
from .apierror import project_not_found
from .enrich import add_derived
from .payloads import SPAN, TRACE
from .timeutil import project_id_for


class Listings:
    """For :class:`db.Store`: the reads of this module (it needs the store's connection and ``get``)."""

    _connection: Callable[[], AbstractContextManager[sqlite3.Connection]]
    get: Callable[..., dict]

    def counts(self) -> dict[str, int]:
        with self._connection() as conn:
            return {
                "traces": conn.execute("SELECT count(*) FROM traces WHERE has_base = 1").fetchone()[0],
                "spans": conn.execute("SELECT count(*) FROM spans WHERE has_base = 1").fetchone()[0],
            }

    def project(self, *, project_id: str | None = None, name: str | None = None) -> dict:
        """Opik's ProjectPublic for a project the store has seen, by id or by name."""
        with self._connection() as conn:
            if project_id is not None:
                row = conn.execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
            else:
                row = conn.execute("SELECT * FROM projects WHERE id = ?", (project_id_for(name or ""),)).fetchone()
        if row is None:
            raise project_not_found(name=None if project_id is not None else name, project_id=project_id)
        out = {"id": row["id"], "name": row["name"], "visibility": "private", "created_at": row["created_at"],
               "last_updated_at": row["last_updated_at"], "last_updated_trace_at": row["last_updated_trace_at"]}
        return {k: v for k, v in out.items() if v is not None}

    def recent_traces(self, limit: int, before: str | None = None) -> list[dict]:
        """The newest traces of every project (for the index page), with their project names."""
        where, params = ("WHERE t.has_base = 1 AND t.id < ?", [before]) if before else ("WHERE t.has_base = 1", [])
        with self._connection() as conn:
            found = conn.execute(
                f"SELECT t.*, p.name AS project FROM traces t LEFT JOIN projects p ON p.id = t.project_id "
                f"{where} ORDER BY t.id DESC LIMIT ?", [*params, limit],
            ).fetchall()
            items = [{**rows.public(row, TRACE), "project_name": row["project"]} for row in found]
            return add_derived(conn, TRACE, items, frozenset({"usage", "providers"}))

    def trace_with_spans(self, trace_id: str, max_spans: int) -> tuple[dict, list[dict], int]:
        """One trace, up to ``max_spans`` of its spans (oldest first) and how many it has."""
        trace = self.get(TRACE, trace_id)
        with self._connection() as conn:
            total = conn.execute("SELECT count(*) FROM spans WHERE trace_id = ? AND has_base = 1",
                                 (trace_id,)).fetchone()[0]
            found = conn.execute(
                "SELECT * FROM spans WHERE trace_id = ? AND has_base = 1 ORDER BY start_time, id LIMIT ?",
                (trace_id, max_spans),
            ).fetchall()
            spans = add_derived(conn, SPAN, [rows.public(row, SPAN) for row in found], frozenset())
            name = conn.execute("SELECT name FROM projects WHERE id = ?", (trace["project_id"],)).fetchone()
        trace["project_name"] = name["name"] if name else None
        return trace, spans, total
