"""Writes the store refused, kept so that a turn without a trace can say why.

Enters: each refused write (4xx to a POST, PUT or PATCH under ``/api`` other than a search
or lookup) that names its project in a ``projectName`` header, as OTLP exporters do (the
SDK names its project in the body, which a refused request may not let the store read).
Leaves: for a project (case-insensitive) and a moment, the refusals since then grouped by
status and message, with a count and the first and last time, as
``GET /api/obai-trace-store/refusals?project=NAME&since=ISO`` answers.

Only the last :data:`MAX_GROUPS` groups are kept (in memory: a restart forgets them), so a
flood of bad requests cannot grow the store.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from .timeutil import now_ts

MAX_GROUPS = 500
MAX_MESSAGE_CHARS = 300


class Refusals:
    def __init__(self) -> None:
        self._groups: OrderedDict[tuple[str | None, int, str], dict] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, project: str, status: int, message: str) -> None:
        key = (project.strip().lower(), status, message[:MAX_MESSAGE_CHARS])
        stamp = now_ts()
        with self._lock:
            group = self._groups.pop(key, None) or {
                "project": project, "status": status, "message": key[2], "count": 0, "first": stamp}
            group["count"] += 1
            group["last"] = stamp
            self._groups[key] = group
            while len(self._groups) > MAX_GROUPS:
                self._groups.popitem(last=False)

    def since(self, project: str | None, moment: str | None) -> list[dict]:
        """Groups whose last refusal is at or after ``moment`` (fixed-form UTC text), for ``project``
        (case-insensitive; every project when None)."""
        wanted = project.strip().lower() if project else None
        with self._lock:
            groups = [dict(group) for (name, _, _), group in self._groups.items()
                      if wanted in (None, name) and (moment is None or group["last"] >= moment)]
        return sorted(groups, key=lambda group: group["first"])
