"""The raw span tree of one trace, as the backend has it: what a vocabulary is written from.

Every span in tree order (children by start time, then id) with its type, offset,
duration, input, output, metadata and error, and what the current vocabulary makes of
it (hub, guardrail and its decision, skill load and the skill's name, specialist call
and the specialist's name). The text form cuts long values; the JSON form keeps them.
"""
from __future__ import annotations

import json
from typing import Any

from ..base.clock import parse_iso
from ..base.errors import TraceNotFound
from ..config.sections import Vocabulary
from .backend import Backend
from .search import newest_trace_id as _newest
from .values import dig, guardrail_decision, ms_since, span_ms

VALUE_CHARS = 300
TREE_COLUMNS = 64  # levels of the tree drawn as columns; a span deeper than this says its level instead
TRACE_FIELDS = ("id", "name", "start_time", "end_time", "thread_id", "tags", "input", "output", "metadata",
                "error_info")
SPAN_FIELDS = ("id", "name", "type", "parent_span_id", "start_time", "end_time", "input", "output", "metadata",
               "error_info")


def marks(span: dict, v: Vocabulary) -> list[str]:
    """What the vocabulary reads in ``span``, e.g. ``specialist: quotes``."""
    name = span.get("name")
    out = []
    if v.is_hub(name):
        out.append("hub")
    if v.guardrail.matches(name):
        value = dig(span, v.guardrail_allowed_field)
        state = {True: "allowed", False: "refused", None: "unknown value"}[guardrail_decision(value, v)]
        out.append(f"guardrail: {v.guardrail_allowed_field} = {json.dumps(value)} ({state})")
    hit, captured = v.skill_load.match(name)
    if hit:
        skill = captured if v.skill_name_field == "name" else dig(span, v.skill_name_field)
        out.append(f"skill load: {skill if isinstance(skill, str) else json.dumps(skill)}"
                   + ("" if isinstance(skill, str) else f" (nothing at {v.skill_name_field})"))
    specialist = v.specialist_name(name, span.get("type"))
    if specialist is not None:
        listed = "" if specialist in v.specialists or not v.specialists else " (not in vocabulary.specialists)"
        out.append(f"specialist: {specialist}{listed}")
    return out


def tree(trace: dict, spans: list[dict], vocabulary: Vocabulary | None = None) -> dict:
    """The trace and its spans in tree order, each span with its depth and marks."""
    origin = parse_iso(trace["start_time"]) if trace.get("start_time") else None
    ids = {s.get("id") for s in spans}
    children: dict[str | None, list[dict]] = {}
    for s in spans:
        parent = s.get("parent_span_id") if s.get("parent_span_id") in ids else None
        children.setdefault(parent, []).append(s)
    for group in children.values():
        group.sort(key=lambda s: (s.get("start_time") or "", s.get("id") or ""))
    rows: list[dict] = []
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:  # depth first with a stack of its own: a chain of thousands of spans is no recursion
        s, depth = stack.pop()
        row = {k: s.get(k) for k in SPAN_FIELDS}
        row.update(depth=depth, offset_ms=ms_since(s.get("start_time"), origin), duration_ms=span_ms(s))
        if vocabulary is not None:
            row["marks"] = marks(s, vocabulary)
        rows.append(row)
        stack.extend((c, depth + 1) for c in reversed(children.get(s.get("id"), [])))
    return {"trace": {k: trace.get(k) for k in TRACE_FIELDS}, "spans": rows}


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + f" … [cut: {len(text) - VALUE_CHARS} more chars]"


def render(t: dict) -> str:
    """The tree as text: one line per span, then its fields, indented under it."""
    tr = t["trace"]
    lines = [f"TRACE {tr['id']}  {tr['name']}  thread {tr.get('thread_id') or '(none)'}  "
             f"tags {', '.join(tr.get('tags') or []) or '(none)'}"]
    for key in ("input", "output", "metadata", "error_info"):
        if tr.get(key) is not None:
            lines.append(f"  {key + ':':<10} {_value(tr[key])}")
    rows = t["spans"]
    last = _last_flags(rows)
    drawn: list[bool] = []  # per level: whether the row drawn last at that level has no later sibling
    for i, row in enumerate(rows):
        depth = row["depth"]
        del drawn[depth:]
        lead = "".join("   " if done else "│  " for done in drawn[:TREE_COLUMNS])
        if depth > TREE_COLUMNS:
            lead += f"⋯ (level {depth}) "
        head = f"{lead}{'└─ ' if last[i] else '├─ '}{row['name']} [{row.get('type')}] +{row['offset_ms']} ms"
        if row.get("duration_ms") is not None:
            head += f" {row['duration_ms']} ms"
        if row.get("marks"):
            head += "   ← " + "; ".join(row["marks"])
        lines.append(head)
        drawn.extend([False] * (depth - len(drawn)))  # levels whose row was not drawn (orphaned depth)
        drawn.append(last[i])
        pad = "".join("   " if done else "│  " for done in drawn[:TREE_COLUMNS + 1]) + "   "
        for key in ("input", "output", "metadata", "error_info"):
            if row.get(key) is not None:
                lines.append(f"{pad}{key + ':':<10} {_value(row[key])}")
    if not rows:
        lines.append("(no spans)")
    return "\n".join(lines) + "\n"


def _last_flags(rows: list[dict]) -> list[bool]:
    """For each row (tree order, with depths): whether no later sibling follows it. One pass from the end."""
    flags = [True] * len(rows)
    later: list[bool] = []  # per level: a row at this level was seen below, within the same parent
    for i in range(len(rows) - 1, -1, -1):
        depth = rows[i]["depth"]
        del later[depth + 1:]
        later.extend([False] * (depth + 1 - len(later)))
        flags[i] = not later[depth]
        later[depth] = True
    return flags


def newest_trace_id(backend: Backend) -> str:
    """The id of the newest trace of the backend's project."""
    found = _newest(backend)
    if found is None:
        raise TraceNotFound(f"no trace in project {backend.project!r} of the {backend.describe()}: run the agent "
                            "once with the same trace configuration, or check the project name")
    return found
