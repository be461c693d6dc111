"""Which traces a draft is written from: the newest N of a project, by tag or since a time.

A backend (the local store or an Opik) and the selection go in; ``Sampled`` traces come
out, each with all its spans in start order, as ``traces sample --json`` shows them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import TraceNotFound, UsageError
from ..trace.backend import Backend, client
from ..trace.resolve import as_dict, fetch
from ..trace.search import is_project_missing

MAX_TRACES = 200


@dataclass(frozen=True)
class Sampled:
    """One real trace and its spans (start order)."""

    trace: dict
    spans: list[dict]

    @property
    def id(self) -> str:
        return str(self.trace.get("id"))

    def short(self) -> str:
        return self.id[:13]


def since_time(text: str) -> str:
    """An ISO time from ``2h``, ``30m``, ``1d`` before now, or an ISO time itself."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhd])", text.strip())
    if m:
        seconds = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        return iso(utc_now() - timedelta(seconds=seconds))
    try:
        return iso(parse_iso(text))
    except ValueError:
        raise UsageError(f"--since {text!r}: give a duration (30m, 2h, 1d) or an ISO time") from None


def filter_for(tag: str | None, since: str | None) -> str | None:
    parts = []
    if tag:
        if '"' in tag or "\\" in tag:
            raise UsageError(f"--tag {tag!r}: a tag with quotes or backslashes cannot be searched")
        parts.append(f'tags contains "{tag}"')
    if since:
        parts.append(f'start_time >= "{since_time(since)}"')
    return " AND ".join(parts) or None


def sample(backend: Backend, *, limit: int, tag: str | None = None, since: str | None = None) -> list[Sampled]:
    """The newest ``limit`` traces of the backend's project that match, oldest first."""
    if not 1 <= limit <= MAX_TRACES:
        raise UsageError(f"--traces {limit}: use 1 to {MAX_TRACES}")
    try:
        found = client(backend).search_traces(project_name=backend.project, filter_string=filter_for(tag, since),
                                              max_results=limit, truncate=False)
    except Exception as exc:  # the SDK raises many types; a project nobody wrote to is "no trace"
        if not is_project_missing(exc):
            raise
        found = []
    traces = sorted((as_dict(t) for t in found), key=lambda t: (t.get("start_time") or "", t.get("id") or ""))
    if not traces:
        what = " and ".join(x for x in (f"tag {tag!r}" if tag else "", f"since {since}" if since else "") if x)
        raise TraceNotFound(f"no trace in project {backend.project!r} of the {backend.describe()}"
                            + (f" with {what}" if what else "") + ": run the agent a few times with the same trace "
                            "configuration (an answered question, a refused one, one per tool), then adopt again")
    out = []
    for t in traces[-limit:]:
        fetched = fetch(backend, t["id"], found=t)
        spans = sorted(fetched.spans, key=lambda s: (s.get("start_time") or "", s.get("id") or ""))
        out.append(Sampled(trace=fetched.trace, spans=spans))
    return out
