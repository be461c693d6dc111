"""The Opik ids an OTLP export's OTel trace and span ids get, kept apart per OTel trace and project.

Enters: an open write transaction, the project, and what an export needs: each OTel trace id with
the earliest start (ms) the export gives it, and each (OTel trace id, span id) the export names as
a span or a parent. Leaves: :class:`OtelIds`, the Opik id of each, remembered so that a later
export of the same OTel trace (a span exported later, a retried batch) gets the same ids.

Opik derives an id as a UUIDv7 of a millisecond stamp and the first 80 bits of the SHA-256 of the
OTel id (``OpenTelemetryMapper.convertOtelIdToUUIDv7``): a trace with the earliest span start of
the first export that names it, remembered per workspace, project and OTel trace id; a span with
its trace's stamp. Its storage keys every row by project and trace, so the same id in another
project or another trace is another row. This store keys a row by its id alone, so it gives each
OTel trace (per project) and each span (per OTel trace) Opik's id when no other OTel trace or
project holds it, and otherwise an id namespaced by what Opik keys it with (the project for a
trace, the Opik trace for a span): an export can never move or overwrite a span or trace of
another OTel trace or another project.
"""
from __future__ import annotations

import hashlib
import sqlite3
import uuid
from dataclasses import dataclass, field

from typing import Any

from .otlp import iter_spans, otel_id_to_uuid7, uuid7_millis


@dataclass
class OtelIds:
    """The Opik id of each OTel trace (hex) and each (OTel trace, span) pair of one export."""

    traces: dict[str, str] = field(default_factory=dict)
    spans: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass
class IdNeeds:
    """What an export names: each OTel trace with its earliest start (ms), each span and parent pair."""

    earliest_ms: dict[str, int] = field(default_factory=dict)
    spans: set[tuple[str, str]] = field(default_factory=set)


def id_needs(request: Any) -> IdNeeds:
    """Each OTel trace (hex) of an ``ExportTraceServiceRequest`` with its earliest span start (ms), and each
    (trace, span) pair it names as a span or a parent."""
    needs = IdNeeds()
    for span in iter_spans(request):
        trace = span.trace_id.hex()
        millis = span.start_time_unix_nano // 1_000_000
        if trace not in needs.earliest_ms or millis < needs.earliest_ms[trace]:
            needs.earliest_ms[trace] = millis
        needs.spans.add((trace, span.span_id.hex()))
        if span.parent_span_id:
            needs.spans.add((trace, span.parent_span_id.hex()))
    return needs


def namespaced(stamp_ms: int, *parts: bytes) -> str:
    """A UUIDv7 of ``stamp_ms`` whose other bits come from the SHA-256 of ``parts`` (lengths included)."""
    digest = hashlib.sha256(b"".join(len(p).to_bytes(2, "big") + p for p in parts)).digest()
    raw = bytearray((stamp_ms & ((1 << 48) - 1)).to_bytes(6, "big") + digest[:10])
    raw[6] = (raw[6] & 0x0F) | 0x70
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def _trace_taken(conn: sqlite3.Connection, candidate: str) -> bool:
    """Held by another OTel trace (of any project) or by a trace written otherwise."""
    return (conn.execute("SELECT 1 FROM otel_trace_ids WHERE trace_id = ?", (candidate,)).fetchone() is not None
            or conn.execute("SELECT 1 FROM traces WHERE id = ?", (candidate,)).fetchone() is not None)


def _span_taken(conn: sqlite3.Connection, candidate: str, project_id: str, trace_id: str) -> bool:
    """Held by another OTel span, or by a span of another trace or project (a span this trace stored before
    the store kept span ids is this one)."""
    if conn.execute("SELECT 1 FROM otel_span_ids WHERE span_id = ?", (candidate,)).fetchone() is not None:
        return True
    row = conn.execute("SELECT trace_id, project_id FROM spans WHERE id = ?", (candidate,)).fetchone()
    return row is not None and (row["trace_id"], row["project_id"]) != (trace_id, project_id)


def _trace_id(conn: sqlite3.Connection, project_id: str, otel_trace: str, earliest_ms: int) -> str:
    row = conn.execute("SELECT trace_id FROM otel_trace_ids WHERE project_id = ? AND otel_trace_id = ?",
                       (project_id, otel_trace)).fetchone()
    if row is not None:
        return row["trace_id"]
    raw = bytes.fromhex(otel_trace)
    chosen = otel_id_to_uuid7(raw, earliest_ms)
    salt = 0
    while _trace_taken(conn, chosen):  # another project's (or another OTel trace's) id
        chosen = namespaced(earliest_ms, b"trace", project_id.encode(), raw, salt.to_bytes(4, "big"))
        salt += 1
    conn.execute("INSERT INTO otel_trace_ids (project_id, otel_trace_id, trace_id) VALUES (?, ?, ?)",
                 (project_id, otel_trace, chosen))
    return chosen


def _span_id(conn: sqlite3.Connection, project_id: str, otel_trace: str, otel_span: str, trace_id: str) -> str:
    row = conn.execute("SELECT span_id FROM otel_span_ids WHERE project_id = ? AND otel_trace_id = ? "
                       "AND otel_span_id = ?", (project_id, otel_trace, otel_span)).fetchone()
    if row is not None:
        return row["span_id"]
    raw, stamp = bytes.fromhex(otel_span), uuid7_millis(trace_id)
    chosen = otel_id_to_uuid7(raw, stamp)
    salt = 0
    while _span_taken(conn, chosen, project_id, trace_id):  # the same span id in another OTel trace (same stamp) or project
        chosen = namespaced(stamp, b"span", uuid.UUID(trace_id).bytes, raw, salt.to_bytes(4, "big"))
        salt += 1
    conn.execute("INSERT INTO otel_span_ids (project_id, otel_trace_id, otel_span_id, span_id) VALUES (?, ?, ?, ?)",
                 (project_id, otel_trace, otel_span, chosen))
    return chosen


def assign(conn: sqlite3.Connection, project_id: str, needs: IdNeeds) -> OtelIds:
    """The Opik ids of everything the export names, remembered for later exports."""
    ids = OtelIds()
    for otel_trace, earliest in sorted(needs.earliest_ms.items()):
        ids.traces[otel_trace] = _trace_id(conn, project_id, otel_trace, earliest)
    for otel_trace, otel_span in sorted(needs.spans):
        ids.spans[(otel_trace, otel_span)] = _span_id(conn, project_id, otel_trace, otel_span,
                                                      ids.traces[otel_trace])
    return ids
