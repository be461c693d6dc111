"""Exports the trace backend refused: the cause named when a turn's trace is not found.

Enters: a backend and the moment the turn's trace could first have been written, or the
tail of the agent's stderr. Leaves: one sentence such as ``the trace backend refused 3
exports: 404 no such endpoint: POST /api/v1/private/otel/v1/traces``, or None.

The local store keeps every write it refused, per project and per turn key (``GET
/api/obai-trace-store/refusals``), and puts a turn's refusals on the trace that turn created, so a
unit can also name what its turn tried and was refused (another unit's trace to change, a delete)
at no cost. Against Opik nothing of the kind can be asked, but
an OpenTelemetry exporter logs each refused batch on stderr ("Failed to export span batch
code: 404, reason: …"), which the agent's stderr tail keeps.
"""
from __future__ import annotations

import re
import threading
from datetime import datetime
from typing import Any

from ..base import tls
from ..base.clock import iso
from .backend import Backend

SHOWN_GROUPS = 3
# What the local store puts on a trace a turn created, for the harness's reads (tracestore.server).
REFUSED_FIELD = "obai_refused_writes"
MESSAGE_CHARS = 160

# The OTLP/HTTP exporters' log line for a refused batch (Python: "code: 404, reason: ...").
_EXPORTER_LINE = re.compile(
    r"Failed to export (?:span batch|spans|traces?)[^\n]*?code:?\s*(?P<status>[1-5]\d\d)"
    r"(?:,?\s*reason:\s*(?P<reason>[^\n]*))?", re.IGNORECASE)


_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _client(backend: Backend, timeout_s: float) -> Any:
    """One keep-alive client per store: every unit asks, and a new connection per question costs the store a thread."""
    import httpx  # deferred: a third of a second of import time

    with _LOCK:
        found = _CLIENTS.get(backend.api_url or "")
        if found is None:
            found = _CLIENTS[backend.api_url or ""] = httpx.Client(
                timeout=timeout_s, trust_env=False, verify=tls.default_context(),
                headers={"Authorization": backend.sdk_env.get("OPIK_API_KEY", "")})
        return found


def from_store(backend: Backend, since: datetime, timeout_s: float = 3.0, *, writer: str | None = None) -> str | None:
    """What the local store refused since ``since`` of writes naming ``backend.project``, or (``writer``) of
    the writes of one turn's key, whatever project they named."""
    if backend.kind != "local" or not backend.api_url:
        return None
    import httpx

    params = {"writer": writer} if writer else {"project": backend.project}
    try:
        response = _client(backend, timeout_s).get(backend.api_url.rstrip("/") + "/obai-trace-store/refusals",
                                                   params={**params, "since": iso(since)})
        groups = response.json().get("refusals") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None  # an older store without the route, or one that went away: nothing to add
    return describe(groups, turn=bool(writer))


def of_trace(trace: dict) -> str | None:
    """The writes the local store refused the turn that created ``trace`` (it puts them on the trace the
    harness reads), or None."""
    return describe(trace.get(REFUSED_FIELD), turn=True)


def describe(groups: object, *, turn: bool) -> str | None:
    """One sentence of refusal groups (the store's JSON), the last few shown; None when there are none."""
    if not isinstance(groups, list) or not groups or not all(isinstance(g, dict) for g in groups):
        return None
    total = sum(int(g.get("count") or 0) for g in groups)
    parts = [f"{g.get('status')} {str(g.get('message') or '')[:MESSAGE_CHARS]}"
             + (f" (x{g['count']})" if len(groups) > 1 and g.get("count", 1) > 1 else "")
             for g in groups[-SHOWN_GROUPS:]]
    more = f"; and {len(groups) - SHOWN_GROUPS} other refusals" if len(groups) > SHOWN_GROUPS else ""
    if turn:
        return f"the trace store refused {_writes(total)} of this turn: {'; '.join(parts)}{more}"
    return f"the trace backend refused {_exports(total)}: {'; '.join(parts)}{more}"


def from_stderr(stderr: str) -> str | None:
    """The exports an OTLP exporter logged as refused in the agent's stderr, or None."""
    found = list(_EXPORTER_LINE.finditer(stderr or ""))
    if not found:
        return None
    last = found[-1]
    reason = (last.group("reason") or "").strip()[:MESSAGE_CHARS]
    return (f"the trace backend refused {_exports(len(found))} (the agent's stderr): "
            f"{last.group('status')} {reason}".rstrip())


def _writes(count: int) -> str:
    return f"{count} write" + ("" if count == 1 else "s")


def _exports(count: int) -> str:
    return f"{count} export" + ("" if count == 1 else "s")
