"""Feedback scores: the SDK's score writes checked, stored, and read back onto entities.

Enters: ``{"scores": [FeedbackScoreBatchItem, ...]}`` (the batch PUT), one score for one
entity (the single PUT), or a name to delete. Leaves: rows of ``feedback_scores`` (one per
entity and score name; a later score of the same name replaces the earlier one, as in
Opik), and lists of FeedbackScorePublic JSON for reads.

A score may arrive before the entity it scores (the SDK sends them on separate queues);
it is kept and shows up once the entity does.
"""
from __future__ import annotations

import math
import sqlite3
from typing import Any, Iterable

from .apierror import bad_request
from .payloads import Kind
from .timeutil import DEFAULT_PROJECT, parse_uuid, project_id_for

MAX_SCORES = 1000
SOURCES = ("ui", "sdk", "online_scoring")
# Opik keeps a score as a decimal of at most nine integer digits.
VALUE_LIMIT = 999_999_999.999999999


def _text(value: Any, what: str, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise bad_request(f"{what} must be a {'non-empty ' if required else ''}string")
    return value


def _value(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_request(f"{what} must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or abs(number) > VALUE_LIMIT:
        raise bad_request(f"{what} must be a number between -{VALUE_LIMIT} and {VALUE_LIMIT}")
    return number


def parse_score(item: Any, what: str, entity_id: str | None = None) -> dict:
    """One score as a row dict; ``entity_id`` comes from the path for a single PUT."""
    if not isinstance(item, dict):
        raise bad_request(f"{what} must be a JSON object")
    if entity_id is None:
        entity_id = parse_uuid(item.get("id"), f"{what}.id")
    source = item.get("source")
    if source not in SOURCES:
        raise bad_request(f"{what}.source must be one of {', '.join(SOURCES)}, got {source!r}")
    project_name = _text(item.get("project_name"), f"{what}.project_name")
    project_id = item.get("project_id")
    if project_name is not None or project_id is None:
        project_id = project_id_for(project_name or DEFAULT_PROJECT)
    else:
        project_id = parse_uuid(project_id, f"{what}.project_id")
    return {
        "entity_id": entity_id,
        "project_id": project_id,
        "project_name": project_name,
        "name": _text(item.get("name"), f"{what}.name", required=True),
        "value": _value(item.get("value"), f"{what}.value"),
        "category_name": _text(item.get("category_name"), f"{what}.category_name"),
        "reason": _text(item.get("reason"), f"{what}.reason"),
        "source": source,
    }


def parse_batch(body: Any) -> list[dict]:
    if not isinstance(body, dict) or not isinstance(body.get("scores"), list):
        raise bad_request("request body must be an object with a list under 'scores'")
    scores = body["scores"]
    if not 1 <= len(scores) <= MAX_SCORES:
        raise bad_request(f"scores must hold 1 to {MAX_SCORES} items, got {len(scores)}")
    return [parse_score(item, f"scores[{i}]") for i, item in enumerate(scores)]


def parse_delete(body: Any) -> str:
    if not isinstance(body, dict):
        raise bad_request("request body must be an object with the 'name' of the score to delete")
    return _text(body.get("name"), "request body.name", required=True)


def write(conn: sqlite3.Connection, kind: Kind, scores: list[dict], now: str, writer: str) -> None:
    conn.executemany(
        "INSERT INTO feedback_scores (kind, entity_id, name, project_id, value, category_name, reason, source, "
        "created_at, last_updated_at, created_by) VALUES (:kind, :entity_id, :name, :project_id, :value, "
        ":category_name, :reason, :source, :now, :now, :writer) ON CONFLICT (kind, entity_id, name) DO UPDATE SET "
        "project_id = excluded.project_id, value = excluded.value, category_name = excluded.category_name, "
        "reason = excluded.reason, source = excluded.source, last_updated_at = excluded.last_updated_at",
        [{**score, "kind": kind.name, "now": now, "writer": writer} for score in scores],
    )


def delete(conn: sqlite3.Connection, kind: Kind, entity_id: str, name: str) -> None:
    conn.execute("DELETE FROM feedback_scores WHERE kind = ? AND entity_id = ? AND name = ?",
                 (kind.name, entity_id, name))


def public(row: sqlite3.Row) -> dict:
    out = {
        "name": row["name"],
        "category_name": row["category_name"],
        "value": row["value"],
        "reason": row["reason"],
        "source": row["source"],
        "created_at": row["created_at"],
        "last_updated_at": row["last_updated_at"],
    }
    return {k: v for k, v in out.items() if v is not None}


def chunks(ids: list[str], size: int = 500) -> Iterable[list[str]]:
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


def scores_of(conn: sqlite3.Connection, kind: Kind, ids: list[str]) -> dict[str, list[dict]]:
    """Each entity's scores, by name."""
    found: dict[str, list[dict]] = {}
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        rows = conn.execute(
            f"SELECT * FROM feedback_scores WHERE kind = ? AND entity_id IN ({marks}) ORDER BY entity_id, name",
            [kind.name, *part],
        ).fetchall()
        for row in rows:
            found.setdefault(row["entity_id"], []).append(public(row))
    return found


def span_scores_of(conn: sqlite3.Connection, trace_ids: list[str]) -> dict[str, list[dict]]:
    """Per trace, its spans' scores averaged by name (Opik's ``span_feedback_scores``)."""
    found: dict[str, list[dict]] = {}
    for part in chunks(trace_ids):
        marks = ", ".join("?" for _ in part)
        rows = conn.execute(
            "SELECT s.trace_id AS trace_id, f.name AS name, avg(f.value) AS value, min(f.source) AS source, "
            "min(f.created_at) AS created_at, max(f.last_updated_at) AS last_updated_at "
            f"FROM spans s JOIN feedback_scores f ON f.kind = 'span' AND f.entity_id = s.id "
            f"WHERE s.trace_id IN ({marks}) AND s.has_base = 1 GROUP BY s.trace_id, f.name "
            "ORDER BY s.trace_id, f.name",
            part,
        ).fetchall()
        for row in rows:
            found.setdefault(row["trace_id"], []).append({
                "name": row["name"], "value": row["value"], "source": row["source"],
                "created_at": row["created_at"], "last_updated_at": row["last_updated_at"],
            })
    return found
