"""What Opik derives for a trace read from its spans and scores, added to public JSON.

Enters: public trace (or span) dicts as :mod:`rows` builds them, a connection, and the
fields the caller excluded. Leaves: the same dicts with ``span_count``,
``llm_span_count``, ``has_tool_spans``, ``providers`` (sorted), ``usage`` (summed per
key), ``total_estimated_cost`` (summed), ``feedback_scores`` and, for traces,
``span_feedback_scores`` (span scores averaged by name). As Opik's trace reads do, the
providers are also put into the trace's metadata, as its first key, when there are any; a
span's ``provider`` goes first into its own metadata unless that metadata has the key.
With ``visible_before`` only spans that arrived before that moment count (strict mode).
"""
from __future__ import annotations

import sqlite3

from . import feedback
from .feedback import chunks
from .payloads import TRACE, Kind
from .rows import parsed

SPAN_DERIVED = ("span_count", "llm_span_count", "has_tool_spans", "providers", "usage", "total_estimated_cost")


def span_stats(conn: sqlite3.Connection, ids: list[str], visible_before: float | None) -> dict[str, dict]:
    stats: dict[str, dict] = {}
    seen = "" if visible_before is None else f" AND visible_at <= {float(visible_before)!r}"
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        providers, usages = [], []
        for row in conn.execute(
            "SELECT trace_id, count(*) AS n, total(type = 'llm') AS llm, max(type = 'tool') AS tool, "
            "total(json_extract(extra, '$.total_estimated_cost')) AS cost, "
            "count(json_extract(extra, '$.total_estimated_cost')) AS costed, "
            "max(instr(extra, '\"provider\"') > 0) AS provided, max(instr(extra, '\"usage\"') > 0) AS used "
            f"FROM spans WHERE trace_id IN ({marks}) AND has_base = 1{seen} GROUP BY trace_id",
            part,
        ):
            entry = {"span_count": row["n"], "llm_span_count": int(row["llm"]), "has_tool_spans": bool(row["tool"])}
            if row["costed"]:
                entry["total_estimated_cost"] = row["cost"]
            stats[row["trace_id"]] = entry
            if row["provided"]:
                providers.append(row["trace_id"])
            if row["used"]:
                usages.append(row["trace_id"])
        _providers(conn, stats, providers, seen)
        _usage(conn, stats, usages, seen)
    return stats


def _providers(conn: sqlite3.Connection, stats: dict[str, dict], ids: list[str], seen: str) -> None:
    """Each trace's span providers, for the traces whose spans name one."""
    if not ids:
        return
    marks = ", ".join("?" for _ in ids)
    for row in conn.execute(
        "SELECT DISTINCT trace_id, json_extract(extra, '$.provider') AS provider "
        f"FROM spans WHERE trace_id IN ({marks}) AND has_base = 1{seen} AND provider IS NOT NULL",
        ids,
    ):
        stats[row["trace_id"]].setdefault("providers", []).append(str(row["provider"]))


def _usage(conn: sqlite3.Connection, stats: dict[str, dict], ids: list[str], seen: str) -> None:
    """Each trace's usage summed per key over its spans, for the traces whose spans count any."""
    if not ids:
        return
    marks = ", ".join("?" for _ in ids)
    for row in conn.execute(
        "SELECT s.trace_id AS trace_id, u.key AS key, total(u.value) AS amount "
        "FROM spans s, json_each(s.extra, '$.usage') u "
        f"WHERE s.trace_id IN ({marks}) AND s.has_base = 1{seen.replace(' visible_at', ' s.visible_at')} "
        "AND s.extra LIKE '%\"usage\"%' "
        "GROUP BY s.trace_id, u.key",
        ids,
    ):
        stats[row["trace_id"]].setdefault("usage", {})[row["key"]] = int(row["amount"])


def add_derived(conn: sqlite3.Connection, kind: Kind, items: list[dict], exclude: frozenset[str],
                visible_before: float | None = None) -> list[dict]:
    if not items:
        return items
    ids = [item["id"] for item in items]
    if "feedback_scores" not in exclude:
        for item, scores in zip(items, _in_order(ids, feedback.scores_of(conn, kind, ids))):
            if scores:
                item["feedback_scores"] = scores
    if kind is not TRACE:
        if "metadata" not in exclude:
            for item in items:
                _provider_in_metadata(item)
        return items
    if "span_feedback_scores" not in exclude:
        for item, scores in zip(items, _in_order(ids, feedback.span_scores_of(conn, ids))):
            if scores:
                item["span_feedback_scores"] = scores
    wanted = [name for name in SPAN_DERIVED if name not in exclude]
    if not wanted:
        return items
    stats = span_stats(conn, ids, visible_before)
    for item in items:
        entry = stats.get(item["id"], {"span_count": 0, "llm_span_count": 0, "has_tool_spans": False})
        entry.setdefault("providers", [])
        entry["providers"] = sorted(set(entry["providers"]))
        for name in wanted:
            if name in entry:
                item[name] = entry[name]
        _providers_in_metadata(item, entry["providers"], exclude)
    return items


def _providers_in_metadata(item: dict, providers: list[str], exclude: frozenset[str]) -> None:
    # Opik's TraceDAO puts the providers first into the metadata it returns.
    if not providers or "metadata" in exclude:
        return
    metadata = parsed(item.get("metadata"))
    if metadata is None or isinstance(metadata, dict):
        rest = {k: v for k, v in (metadata or {}).items() if k != "providers"}
        item["metadata"] = {"providers": providers, **rest}


def _provider_in_metadata(span: dict) -> None:
    # Opik's SpanDAO puts a span's provider first into the metadata it returns; a provider key
    # the span's own metadata holds stays as it is.
    provider = span.get("provider")
    metadata = parsed(span.get("metadata")) if provider else None
    if provider and (metadata is None or (isinstance(metadata, dict) and "provider" not in metadata)):
        span["metadata"] = {"provider": provider, **(metadata or {})}


def _in_order(ids: list[str], found: dict[str, list[dict]]) -> list[list[dict]]:
    return [found.get(entity_id, []) for entity_id in ids]
