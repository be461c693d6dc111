"""A trace backend made of recorded traces, for ``resolve(search=...)``.

``resolve`` takes the backend's search as a parameter: given an Opik filter string it
returns the matching traces. ``StoredSearch`` answers it from a list of recorded traces
with the filter semantics of Opik and the local store: string comparisons ignore case,
``contains`` is a substring match, a tag filter matches when some tag contains the value,
``metadata.KEY`` compares the text of that value, times compare as instants. It knows
the clauses the resolver writes and refuses anything else, so a changed filter shows up
as a failing test rather than as a silent match-all.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Callable

_CLAUSE = re.compile(r'(?P<field>[a-z_]+(?:\.[A-Za-z0-9_]+)?) (?P<op>contains|=|>=|<=) "(?P<value>[^"]*)"')


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _matches(trace: dict, field: str, op: str, value: str) -> bool:
    needle = value.lower()
    if field == "tags" and op == "contains":
        return any(needle in tag.lower() for tag in trace.get("tags") or [])
    if field.startswith("metadata.") and op == "=":
        got = (trace.get("metadata") or {}).get(field.split(".", 1)[1])
        return got is not None and str(got).lower() == needle
    if field == "input" and op == "contains":
        return needle in json.dumps(trace.get("input"), ensure_ascii=False, separators=(",", ":")).lower()
    if field == "start_time" and op in (">=", "<="):
        start, bound = _when(trace["start_time"]), _when(value)
        return start >= bound if op == ">=" else start <= bound
    raise AssertionError(f"the resolver sent a clause the stored backend does not know: {field} {op} {value!r}")


def parse(filter_string: str) -> list[tuple[str, str, str]]:
    """The (field, operator, value) clauses of an AND-ed filter string."""
    clauses = list(_CLAUSE.finditer(filter_string))
    rebuilt = " AND ".join(m.group(0) for m in clauses)
    assert rebuilt == filter_string, f"not a conjunction of known clauses: {filter_string!r}"
    return [(m["field"], m["op"], m["value"]) for m in clauses]


class StoredSearch:
    """``search(filter_string) -> traces`` over recorded traces; remembers what it was asked."""

    def __init__(self, traces: list[dict], *, hidden_for: int = 0, fail: Callable[[int], Exception | None] = None):
        self.traces = traces
        self.calls: list[str] = []
        self.hidden_for = hidden_for  # calls that see nothing yet (a trace still on its way)
        self.fail = fail  # call number -> an exception to raise instead of answering

    def __call__(self, filter_string: str) -> list[dict]:
        self.calls.append(filter_string)
        n = len(self.calls)
        error = self.fail(n) if self.fail else None
        if error is not None:
            raise error
        if n <= self.hidden_for:
            return []
        clauses = parse(filter_string)
        return [t for t in self.traces if all(_matches(t, *c) for c in clauses)]
