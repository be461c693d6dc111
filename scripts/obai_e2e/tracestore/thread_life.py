"""A thread's life and its scores, kept as Opik keeps them for its trace threads.

Enters: bodies of Opik's thread writes (``PUT traces/threads/close`` and ``open``, ``PUT
traces/threads/feedback-scores``, ``POST traces/threads/feedback-scores/delete``) and an open
connection. Leaves: rows in ``thread_states`` and ``feedback_scores`` (kind ``thread``), the
status and scores a thread read carries, or a 400/404/409 naming what is wrong.

As Opik's TraceThreadService does: a thread is ``active`` until it is closed, and becomes
active again when a trace of it arrives after the close (``open`` also reopens it). A thread
takes scores whatever its status (Opik used to answer 409 for an active one; the SDK now
says scores may be added at any time); one score per thread and name, the later one wins.
A score for a thread with no trace yet is kept and shows once the thread does.
"""
from __future__ import annotations

import sqlite3
from typing import Any

from . import feedback
from .apierror import ApiError, bad_request
from .schema import PROJECT_TABLES
from .timeutil import DEFAULT_PROJECT, parse_uuid, project_id_for

SCORE_KIND = "thread"
MAX_THREADS = 1000


def score_key(project_id: str, thread_id: str) -> str:
    """The ``entity_id`` of a thread's scores: threads are named per project."""
    return f"{project_id}/{thread_id}"


def parse_target(body: Any) -> tuple[str | None, str | None, list[str]]:
    """``project_name`` / ``project_id`` and the thread ids of a close or open request."""
    if not isinstance(body, dict):
        raise bad_request("request body must be an object with project_name (or project_id) and thread_id "
                          "(or thread_ids)")
    project_name, project_id = body.get("project_name"), body.get("project_id")
    if project_name is not None and not isinstance(project_name, str):
        raise bad_request("project_name must be a string")
    if project_name is None and project_id is None:
        raise bad_request("a thread request needs project_name or project_id")
    if project_id is not None:
        project_id = parse_uuid(project_id, "project_id")
    ids = body.get("thread_ids") if body.get("thread_ids") is not None else [body.get("thread_id")]
    if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_THREADS or \
            not all(isinstance(i, str) and i.strip() for i in ids):
        raise bad_request(f"thread_id must be a non-empty string, or thread_ids a list of 1 to {MAX_THREADS} of them")
    return project_name, project_id, ids


def parse_scores(body: Any) -> list[dict]:
    """Thread scores as rows; each names its thread and project (``Default Project`` without one)."""
    if not isinstance(body, dict) or not isinstance(body.get("scores"), list):
        raise bad_request("request body must be an object with a list under 'scores'")
    items = body["scores"]
    if not 1 <= len(items) <= feedback.MAX_SCORES:
        raise bad_request(f"scores must hold 1 to {feedback.MAX_SCORES} items, got {len(items)}")
    scores = []
    for index, item in enumerate(items):
        what = f"scores[{index}]"
        thread_id = item.get("thread_id") if isinstance(item, dict) else None
        if not isinstance(thread_id, str) or not thread_id.strip():
            raise bad_request(f"{what}.thread_id must be a non-empty string")
        score = feedback.parse_score(item, what, entity_id=thread_id)
        score["project_name"] = item.get("project_name") or DEFAULT_PROJECT
        score["project_id"] = project_id_for(score["project_name"])
        score["thread_id"] = thread_id
        score["entity_id"] = score_key(score["project_id"], thread_id)
        scores.append(score)
    return scores


def parse_score_delete(body: Any) -> tuple[str, str, list[str]]:
    """``project_name``, ``thread_id`` and the score ``names`` of a delete request."""
    if not isinstance(body, dict):
        raise bad_request("request body must be an object with project_name, thread_id and names")
    project_name, thread_id, names = body.get("project_name"), body.get("thread_id"), body.get("names")
    if not isinstance(project_name, str) or not project_name.strip():
        raise bad_request("project_name must be a non-empty string")
    if not isinstance(thread_id, str) or not thread_id.strip():
        raise bad_request("thread_id must be a non-empty string")
    if not isinstance(names, list) or not 1 <= len(names) <= feedback.MAX_SCORES or \
            not all(isinstance(n, str) and n.strip() for n in names):
        raise bad_request(f"names must be a list of 1 to {feedback.MAX_SCORES} non-empty strings")
    return project_name, thread_id, names


def _known(conn: sqlite3.Connection, project_id: str, thread_ids: list[str]) -> set[str]:
    marks = ", ".join("?" for _ in thread_ids)
    found = conn.execute(f"SELECT DISTINCT thread_id FROM traces WHERE project_id = ? AND has_base = 1 "
                         f"AND thread_id IN ({marks})", [project_id, *thread_ids]).fetchall()
    return {row["thread_id"] for row in found}


def close(conn: sqlite3.Connection, project_id: str, thread_ids: list[str], now: str) -> None:
    """Close the threads; one the project has no trace of is a 404, as Opik's closeThread answers."""
    missing = sorted(set(thread_ids) - _known(conn, project_id, thread_ids))
    if missing:
        raise ApiError(404, f"Thread '{missing[0][:200]}' not found", plain=True)
    conn.executemany("INSERT INTO thread_states (project_id, thread_id, closed_at) VALUES (?, ?, ?) "
                     "ON CONFLICT (project_id, thread_id) DO UPDATE SET closed_at = excluded.closed_at",
                     [(project_id, thread_id, now) for thread_id in thread_ids])


def reopen(conn: sqlite3.Connection, project_id: str, thread_ids: list[str]) -> None:
    conn.executemany("DELETE FROM thread_states WHERE project_id = ? AND thread_id = ?",
                     [(project_id, thread_id) for thread_id in thread_ids])


def status(closed_at: str | None, last_trace_created_at: str) -> str:
    """``inactive`` once closed, until a trace of the thread arrives after the close."""
    return "inactive" if closed_at is not None and closed_at >= last_trace_created_at else "active"


def closed_at_of(conn: sqlite3.Connection, project_id: str) -> dict[str, str]:
    found = conn.execute("SELECT thread_id, closed_at FROM thread_states WHERE project_id = ?",
                         (project_id,)).fetchall()
    return {row["thread_id"]: row["closed_at"] for row in found}


def write_scores(conn: sqlite3.Connection, scores: list[dict], now: str, writer: str) -> None:
    """Store the scores, whatever the thread's status (Opik no longer asks for a closed thread)."""
    rows = [{k: v for k, v in score.items() if k != "thread_id"} for score in scores]
    conn.executemany(
        "INSERT INTO feedback_scores (kind, entity_id, name, project_id, value, category_name, reason, source, "
        "created_at, last_updated_at, created_by) VALUES (:kind, :entity_id, :name, :project_id, :value, "
        ":category_name, :reason, :source, :now, :now, :writer) ON CONFLICT (kind, entity_id, name) DO UPDATE SET "
        "value = excluded.value, category_name = excluded.category_name, reason = excluded.reason, "
        "source = excluded.source, last_updated_at = excluded.last_updated_at",
        [{**row, "kind": SCORE_KIND, "now": now, "writer": writer} for row in rows],
    )


def delete_scores(conn: sqlite3.Connection, project_id: str, thread_id: str, names: list[str]) -> None:
    conn.executemany("DELETE FROM feedback_scores WHERE kind = ? AND entity_id = ? AND name = ?",
                     [(SCORE_KIND, score_key(project_id, thread_id), name) for name in names])


def scores_by_thread(conn: sqlite3.Connection, project_id: str) -> dict[str, list[dict]]:
    """Each thread's scores, by name (keyed by thread id)."""
    prefix = f"{project_id}/"
    found = conn.execute("SELECT * FROM feedback_scores WHERE kind = ? AND project_id = ? ORDER BY entity_id, name",
                         (SCORE_KIND, project_id)).fetchall()
    out: dict[str, list[dict]] = {}
    for row in found:
        if row["entity_id"].startswith(prefix):
            out.setdefault(row["entity_id"][len(prefix):], []).append(feedback.public(row))
    return out


def delete_project(conn: sqlite3.Connection, project_id: str) -> None:
    """Everything the store keeps of one project (Opik's ``DELETE /v1/private/projects/{id}``)."""
    for kind, table in (("trace", "traces"), ("span", "spans")):
        conn.execute(f"DELETE FROM {kind}_tags WHERE owner_id IN (SELECT id FROM {table} WHERE project_id = ?)",
                     (project_id,))
    for table in PROJECT_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE project_id = ?", (project_id,))
    conn.execute("DELETE FROM projects WHERE id = ?", (project_id,))
