"""What a turn's key may change: only what the same key created.

Enters: an open write transaction, the rows a write would change and the :class:`Principal`
writing. Leaves: nothing when the write may go on, or a 403 (:func:`apierror.forbidden`) that
names the entity, who created it and the project, for the refusal record.

The store's token (the harness) may change anything. A turn's key may create entities, and
change (PATCH, a batch re-post of an id, a score) only those it created itself; it may add a
span only to a trace it created (or one not stored yet) and score only what it created; it may
close, open or score a thread only when every trace of the thread was written by a key of its
own unit (the two turns of an async unit share the thread). Rows written before the store
recorded writers carry none, so they belong to the harness alone.
"""
from __future__ import annotations

import sqlite3
from typing import Iterable

from .apierror import forbidden
from .feedback import chunks
from .payloads import Kind
from .rows import TABLES
from .turnkeys import Principal

SHOWN_IDS = 3


def _who(created_by: str | None) -> str:
    return f"by {created_by}" if created_by else "before writers were recorded"


def _refuse(what: str, rows: list[sqlite3.Row], by: Principal, key: str = "id") -> None:
    first = rows[0]
    ids = ", ".join(str(row[key]) for row in rows[:SHOWN_IDS])
    more = f" and {len(rows) - SHOWN_IDS} more" if len(rows) > SHOWN_IDS else ""
    raise forbidden(
        f"refused: {what} {ids}{more}, which was written {_who(first['created_by'])}: a turn's key may change only "
        f"what it created itself (this request: {by.name})",
        project=first["project_name"])


def check_rewrite(kind: Kind, olds: Iterable[sqlite3.Row], by: Principal, how: str) -> None:
    """Refuse when a turn's key would change an entity another key created (``how``: re-post or update)."""
    if not by.is_turn:
        return
    foreign = [row for row in olds if row is not None and row["created_by"] != by.name]
    if foreign:
        _refuse(f"{how} of {kind.name}", foreign, by)


def check_traces(conn: sqlite3.Connection, trace_ids: Iterable[str | None], by: Principal, what: str) -> None:
    """Refuse when a turn's key would add to (or score) a stored trace another key created."""
    if not by.is_turn:
        return
    wanted = sorted({t for t in trace_ids if t})
    foreign: list[sqlite3.Row] = []
    for part in chunks(wanted):
        marks = ", ".join("?" for _ in part)
        foreign += conn.execute(f"SELECT id, created_by, project_name FROM traces WHERE id IN ({marks}) "
                                f"AND created_by IS NOT ?", [*part, by.name]).fetchall()
    if foreign:
        _refuse(f"{what} in trace", foreign, by)


def check_scored(conn: sqlite3.Connection, kind: Kind, scores: list[dict], by: Principal) -> None:
    """Refuse scores of a turn's key on entities, or over scores, that another key created."""
    if not by.is_turn:
        return
    table, _ = TABLES[kind.name]
    ids = sorted({score["entity_id"] for score in scores})
    foreign: list[sqlite3.Row] = []
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        foreign += conn.execute(f"SELECT id, created_by, project_name FROM {table} WHERE id IN ({marks}) "
                                f"AND created_by IS NOT ?", [*part, by.name]).fetchall()
    if foreign:
        _refuse(f"a feedback score on {kind.name}", foreign, by)
    check_score_rows(conn, kind.name, scores, by)


def check_score_rows(conn: sqlite3.Connection, score_kind: str, scores: list[dict], by: Principal) -> None:
    """Refuse replacing a score (same entity and name) that another key wrote."""
    if not by.is_turn:
        return
    foreign = []
    for score in scores:
        row = conn.execute("SELECT entity_id, created_by, ? AS project_name FROM feedback_scores "
                           "WHERE kind = ? AND entity_id = ? AND name = ? AND created_by IS NOT ?",
                           (score.get("project_name"), score_kind, score["entity_id"], score["name"],
                            by.name)).fetchone()
        if row is not None:
            foreign.append(row)
    if foreign:
        _refuse(f"replacing feedback score {scores[0]['name']!r} of", foreign, by, key="entity_id")


def check_threads(conn: sqlite3.Connection, project_id: str, thread_ids: list[str], by: Principal,
                  project_name: str | None) -> None:
    """Refuse a turn's key a change to a thread that holds a trace written by a key of another unit."""
    if not by.is_turn:
        return
    foreign = []
    for part in chunks(sorted(set(thread_ids))):
        marks = ", ".join("?" for _ in part)
        foreign += conn.execute(
            f"SELECT DISTINCT thread_id, created_by, ? AS project_name FROM traces WHERE project_id = ? "
            f"AND thread_id IN ({marks}) AND owner IS NOT ?", [project_name, project_id, *part, by.unit]).fetchall()
    if foreign:
        _refuse("a change to thread", foreign, by, key="thread_id")
