"""Writes the store refused, kept so that the unit they concern can say why.

Enters: each refused write (4xx to a POST, PUT, PATCH or DELETE under ``/api`` other than a
search or lookup) whose project is known: from the ``projectName`` header (OTLP exporters), the
body (the SDKs name it in each item), or the entity or project the request touched; with the
writer whose key the request carried (``created_by`` of a turn key; None for the store's token
or no key). Leaves: for a project (case-insensitive) and a moment, optionally one writer, the
refusals since then grouped by status and message, with a count and the first and last time,
as ``GET /api/obai-trace-store/refusals?project=NAME&since=ISO&writer=W`` answers.

A trace a turn's key created carries that turn's refusals when the harness reads it
(``obai_refused_writes``, see :mod:`server`), so naming them costs the harness no request.

Bounded in memory (a restart forgets them) so that no flood can grow the store or wipe
another's record: at most :data:`MAX_PROJECTS` projects (the one refused longest ago is
forgotten first), :data:`MAX_GROUPS` groups per project and :data:`MAX_WRITER_GROUPS` of them
per writer, so one turn flooding its project evicts its own older refusals, not another's.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from .timeutil import now_ts

MAX_PROJECTS = 200
MAX_GROUPS = 500
MAX_WRITER_GROUPS = 100
MAX_MESSAGE_CHARS = 300

_Key = tuple[str | None, int, str]  # writer, status, message


class _Project:
    def __init__(self) -> None:
        self.groups: OrderedDict[_Key, dict] = OrderedDict()
        self.per_writer: dict[str | None, int] = {}

    def add(self, key: _Key, group: dict) -> None:
        writer = key[0]
        self.groups[key] = group
        self.per_writer[writer] = self.per_writer.get(writer, 0) + 1
        if self.per_writer[writer] > MAX_WRITER_GROUPS:
            self._drop(next(k for k in self.groups if k[0] == writer))
        while len(self.groups) > MAX_GROUPS:
            self._drop(next(iter(self.groups)))

    def _drop(self, key: _Key) -> None:
        del self.groups[key]
        self.per_writer[key[0]] -= 1
        if not self.per_writer[key[0]]:
            del self.per_writer[key[0]]


class Refusals:
    def __init__(self) -> None:
        self._projects: OrderedDict[str, _Project] = OrderedDict()
        self._writers: set[str] = set()  # turns with a refusal (a hint: their groups may have been evicted since)
        self._lock = threading.Lock()

    def record(self, project: str, status: int, message: str, writer: str | None = None) -> None:
        name = project.strip().lower()
        key = (writer, status, message[:MAX_MESSAGE_CHARS])
        stamp = now_ts()
        with self._lock:
            entry = self._projects.pop(name, None) or _Project()
            self._projects[name] = entry  # most recently refused last
            while len(self._projects) > MAX_PROJECTS:
                self._projects.popitem(last=False)
            group = entry.groups.pop(key, None)
            if group is None:
                group = {"project": project, "status": status, "message": key[2], "count": 0, "first": stamp}
                if writer is not None:
                    group["writer"] = writer
                entry.add(key, group)
            else:
                entry.groups[key] = group  # moved to the end: the latest refused
            group["count"] += 1
            group["last"] = stamp
            if writer is not None:
                self._writers.add(writer)

    def of_writer(self, writer: str) -> list[dict]:
        """Every refusal group of one turn's key ([] at once for a turn that was refused nothing)."""
        if writer not in self._writers:
            return []
        return self.since(None, None, writer)

    def since(self, project: str | None, moment: str | None, writer: str | None = None) -> list[dict]:
        """Groups whose last refusal is at or after ``moment`` (fixed-form UTC text), of ``project``
        (case-insensitive; every project when None) and ``writer`` (every writer when None)."""
        wanted = project.strip().lower() if project else None
        with self._lock:
            entries = [e for name, e in self._projects.items() if wanted in (None, name)]
            groups = [dict(group) for e in entries for (who, _, _), group in e.groups.items()
                      if (writer is None or who == writer) and (moment is None or group["last"] >= moment)]
        return sorted(groups, key=lambda group: group["first"])
