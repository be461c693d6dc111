"""Whether a turn's trace was written after the turn ended, and whether it is still what the harness read.

Enters: a trace and its spans as the backend returned them (``resolve.fetch``), the turn's end
and the allowance for writes that may land after it. Leaves: the writes that came too late
(:func:`late_writes`), the digest of what a rule can read (:func:`content_sha256`), and the
words for a trace that is gone (:func:`gone_message`: the trace alone, or its whole project).

A trace is the agent's evidence only as it stood when its turn ended. Against a real Opik the
harness cannot scope the key it hands the agent: a later turn (or anyone holding the key) can
PATCH an earlier trace or delete the project. A PATCH shows in ``last_updated_at``, which the
backend stamps when it applies it; a write that sets ``last_updated_at`` itself (a create of
the same id) does not, so what was read is also kept as a digest and compared once more.
Feedback scores and comments are not evidence (the harness writes its own after the run):
the digest leaves them out, and so does ``last_updated_at``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..base.clock import parse_iso
from .backend import Backend, client
from .search import is_project_missing

# What a rule, the curated trace or a trace page reads of a trace and of a span. Values the
# backend derives later (span counts, durations, estimated costs, feedback scores, comments,
# last_updated_at) stay out, so that reading a trace again gives the same digest.
TRACE_FIELDS = ("id", "name", "start_time", "end_time", "input", "output", "metadata", "tags", "error_info",
                "thread_id")
SPAN_FIELDS = ("id", "trace_id", "parent_span_id", "name", "type", "start_time", "end_time", "input", "output",
               "metadata", "tags", "error_info", "usage", "model", "provider")
CHANGED, DELETED = "trace_changed_after_turn", "trace_deleted"  # the unit's reason (judge/rubric/codes.py)


@dataclass(frozen=True)
class LateWrite:
    """A trace or span whose ``last_updated_at`` is later than its turn's end plus the allowance."""

    what: str          # trace | span
    id: str | None
    name: str | None
    at: str

    def text(self) -> str:
        return f"{self.what} {self.name!r} ({self.id}) updated at {self.at}"


def allowance_s(flush_timeout_s: float, clock_skew_s: float) -> float:
    """How long after a turn's end its own writes may still be stamped: the flush the SDK is given at exit
    (``trace_backend.flush_timeout_s``), plus the difference between the harness's clock and the backend's."""
    return float(flush_timeout_s) + float(clock_skew_s)


def _when(value: Any):
    try:
        return parse_iso(str(value)) if value else None
    except ValueError:
        return None


def late_writes(trace: dict, spans: list[dict], ended_at: str, allowance: float) -> list[LateWrite]:
    """Every entity of the trace updated after ``ended_at`` + ``allowance`` seconds, trace first, then by time."""
    end = _when(ended_at)
    if end is None:
        return []
    limit = end + timedelta(seconds=allowance)
    found = []
    for what, entity in [("trace", trace)] + [("span", s) for s in spans]:
        at = _when(entity.get("last_updated_at"))
        if at is not None and at > limit:
            found.append((what != "trace", at, LateWrite(what, entity.get("id"), entity.get("name"),
                                                         str(entity.get("last_updated_at")))))
    return [w for _, _, w in sorted(found, key=lambda f: (f[0], f[1]))]


def describe_late(trace_id: str, writes: list[LateWrite], ended_at: str, allowance: float) -> str:
    shown = "; ".join(w.text() for w in writes[:3]) + (f"; {len(writes) - 3} more" if len(writes) > 3 else "")
    return (f"the trace {trace_id} was written after its turn ended at {ended_at} (allowed: {allowance:g} s of "
            f"flush and clock skew): {shown}")[:500]


def content_sha256(trace: dict, spans: list[dict]) -> str:
    """SHA-256 of what is evidence in a trace and its spans (TRACE_FIELDS, SPAN_FIELDS; spans by id)."""
    body = {"trace": {k: trace.get(k) for k in TRACE_FIELDS},
            "spans": sorted(({k: s.get(k) for k in SPAN_FIELDS} for s in spans), key=lambda s: str(s["id"]))}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_gone(exc: BaseException) -> bool:
    """Opik's answer for an id (or a project) it does not hold: 404."""
    return getattr(exc, "status_code", None) == 404


def project_exists(backend: Backend) -> bool | None:
    """Whether the backend's project exists now (None: the backend did not say)."""
    try:
        client(backend).search_traces(project_name=backend.project, max_results=1, truncate=False,
                                      exclude=["input", "output", "metadata"])
    except Exception as exc:  # noqa: BLE001 - only a missing project answers the question
        return False if is_project_missing(exc) else None
    return True


def gone_message(backend: Backend, trace_id: str, read_at: str | None) -> str:
    """The trace ``trace_id``, read at ``read_at``, is no longer there: named with its project when that went too."""
    seen = f"was there at {read_at}" if read_at else "was there when its turn was judged"
    if project_exists(backend) is False:
        return (f"the project {backend.project!r} no longer exists in the {backend.describe()}: the trace {trace_id}"
                f" {seen} and is gone with it")
    return f"the trace {trace_id} {seen} and is gone from the {backend.describe()}"
