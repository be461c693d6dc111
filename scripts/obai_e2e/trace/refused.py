"""Exports the trace backend refused: the cause named when a turn's trace is not found.

Enters: a backend and the moment the turn's trace could first have been written, or the
tail of the agent's stderr. Leaves: one sentence such as ``the trace backend refused 3
exports: 404 no such endpoint: POST /api/v1/private/otel/v1/traces``, or None.

The local store keeps every write it refused, per project (``GET
/api/obai-trace-store/refusals``). Against Opik nothing of the kind can be asked, but an
OpenTelemetry exporter logs each refused batch on stderr ("Failed to export span batch
code: 404, reason: …"), which the agent's stderr tail keeps.
"""
from __future__ import annotations

import re
from datetime import datetime

from ..base import tls
from ..base.clock import iso
from .backend import Backend

SHOWN_GROUPS = 3
MESSAGE_CHARS = 160

# The OTLP/HTTP exporters' log line for a refused batch (Python: "code: 404, reason: ...").
_EXPORTER_LINE = re.compile(
    r"Failed to export (?:span batch|spans|traces?)[^\n]*?code:?\s*(?P<status>[1-5]\d\d)"
    r"(?:,?\s*reason:\s*(?P<reason>[^\n]*))?", re.IGNORECASE)


def from_store(backend: Backend, since: datetime, timeout_s: float = 3.0) -> str | None:
    """What the local store refused of exports naming ``backend.project`` since ``since``."""
    if backend.kind != "local" or not backend.api_url:
        return None
    import httpx  # deferred: a third of a second of import time

    stamp = iso(since)
    try:
        response = httpx.get(backend.api_url.rstrip("/") + "/obai-trace-store/refusals",
                             params={"project": backend.project, "since": stamp}, timeout=timeout_s,
                             headers={"Authorization": backend.sdk_env.get("OPIK_API_KEY", "")}, trust_env=False,
                             verify=tls.default_context())
        groups = response.json().get("refusals") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None  # an older store without the route, or one that went away: nothing to add
    if not isinstance(groups, list) or not groups:
        return None
    total = sum(int(g.get("count") or 0) for g in groups)
    parts = [f"{g.get('status')} {str(g.get('message') or '')[:MESSAGE_CHARS]}"
             + (f" (x{g['count']})" if len(groups) > 1 and g.get("count", 1) > 1 else "")
             for g in groups[-SHOWN_GROUPS:]]
    more = f"; and {len(groups) - SHOWN_GROUPS} other refusals" if len(groups) > SHOWN_GROUPS else ""
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


def _exports(count: int) -> str:
    return f"{count} export" + ("" if count == 1 else "s")
