"""Opik's thread endpoints, as request handlers mixed into the store's HTTP handler.

Enters: ``POST traces/threads/search`` and ``retrieve``, ``GET traces/threads``, ``PUT
traces/threads/close`` and ``open``, ``PUT traces/threads/feedback-scores`` and ``POST
traces/threads/feedback-scores/delete``. Leaves: TraceThread JSON (searches stream it as
NDJSON), 204 for writes, or the store's JSON errors. Reading is :mod:`threads`, a thread's
life and scores :mod:`thread_life`.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from . import thread_life, threads
from .apierror import ApiError
from .payloads import TRACE, parse_search
from .timeutil import parse_uuid
from .rows import compact_json


class ThreadRoutes:
    """Handlers for the thread endpoints; needs the handler's ``_json``, ``_send`` and ``_send_json``."""

    server: Any
    query: str
    principal: Any

    def _thread_search(self) -> None:
        body = self._json()
        request = parse_search({k: v for k, v in body.items() if k not in ("filters", "last_retrieved_thread_model_id")}
                               if isinstance(body, dict) else body, TRACE)
        filters = threads.check_filters(body.get("filters"))
        after = body.get("last_retrieved_thread_model_id")
        found = [t for t in self.server.store.threads(request.project_name, request.project_id, by=self.principal)
                 if (after is None or t["thread_model_id"] < str(after)) and threads.matches(t, filters)]
        self._send(200, b"".join(compact_json(t).encode("utf-8") + b"\n"
                                 for t in found[:request.limit]), "application/x-ndjson")

    def _thread_get(self) -> None:
        body = self._json()
        thread_id = body.get("thread_id") if isinstance(body, dict) else None
        if not isinstance(thread_id, str) or not thread_id:
            raise ApiError(400, "request body must be an object with the 'thread_id' to read")
        request = parse_search({k: v for k, v in body.items() if k in ("project_name", "project_id")}, TRACE)
        found = self.server.store.threads(request.project_name, request.project_id, thread_id, by=self.principal)
        if not found:
            raise ApiError(404, f"Trace Thread id: {thread_id} not found", plain=True)
        self._send_json(200, found[0])

    def _thread_page(self) -> None:
        try:
            query = {k: v[0] for k, v in parse_qs(self.query, max_num_fields=20).items()}
        except ValueError:
            raise ApiError(400, "too many query parameters") from None
        page, size = _positive(query.get("page", "1"), "page"), _positive(query.get("size", "10"), "size")
        found = self.server.store.threads(query.get("project_name"), query.get("project_id") and
                                          parse_uuid(query["project_id"], "project_id"), by=self.principal)
        self._send_json(200, {"page": page, "size": size, "total": len(found),
                              "content": found[(page - 1) * size: page * size]})

    def _thread_close(self) -> None:
        project_name, project_id, thread_ids = thread_life.parse_target(self._json())
        self.server.store.change_threads(project_name, project_id, thread_ids,
                                         lambda conn, found, now: thread_life.close(conn, found, thread_ids, now),
                                         by=self.principal)
        self._send(204, b"", "")

    def _thread_open(self) -> None:
        project_name, project_id, thread_ids = thread_life.parse_target(self._json())
        self.server.store.change_threads(project_name, project_id, thread_ids,
                                         lambda conn, found, _now: thread_life.reopen(conn, found, thread_ids),
                                         by=self.principal)
        self._send(204, b"", "")

    def _thread_scores(self) -> None:
        self.server.store.write_thread_scores(thread_life.parse_scores(self._json()), by=self.principal)
        self._send(204, b"", "")

    def _thread_score_delete(self) -> None:
        project_name, thread_id, names = thread_life.parse_score_delete(self._json())
        self.server.store.change_threads(project_name, None, [thread_id],
                                         lambda conn, found, _now: thread_life.delete_scores(conn, found, thread_id, names),
                                         by=self.principal)
        self._send(204, b"", "")


def _positive(text: str, what: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ApiError(400, f"{what} must be a whole number of 1 or more, got {text[:40]!r}")
    return int(text)
