"""The store's health, info and refusal routes and Opik's project routes, as request handlers.

Enters: ``GET is-alive/ping`` and ``ver``, ``GET obai-trace-store/info`` and ``refusals``,
``POST projects/retrieve``, ``GET`` / ``DELETE projects/{id}``, the attachment routes. Leaves:
their JSON answers, 204, or the store's JSON errors (the attachment routes are a 501 that says
what to switch off).
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs

from .apierror import ApiError
from .timeutil import norm_ts, parse_uuid

SERVICE = "obai-trace-store"


class AdminRoutes:
    """Handlers needing the handler's ``_json``, ``_send`` and ``_send_json``, ``server`` and ``query``."""

    server: Any
    query: str

    def _ping(self) -> None:
        self._send_json(200, {"healthy": True})

    def _version(self) -> None:
        self._send_json(200, {"version": SERVICE})

    def _info(self) -> None:
        self._send_json(200, {**self.server.info, "pid": os.getpid(), "counts": self.server.store.counts()})

    def _refusals(self) -> None:
        try:
            query = parse_qs(self.query, max_num_fields=10)
        except ValueError:
            raise ApiError(400, "too many query parameters; refusals takes 'project', 'since' and 'writer'") from None
        since = query.get("since", [None])[0]
        since = None if since is None else norm_ts(since, "since")
        found = self.server.refusals.since(query.get("project", [None])[0], since, query.get("writer", [None])[0])
        self._send_json(200, {"refusals": found})

    def _project_by_name(self) -> None:
        body = self._json()
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str) or not name:
            raise ApiError(400, "request body must be an object with the project's 'name'")
        self._send_json(200, self.server.store.project(name=name))

    def _project_by_id(self, raw_id: str) -> None:
        self._send_json(200, self.server.store.project(project_id=parse_uuid(raw_id, "project id")))

    def _project_delete(self, raw_id: str) -> None:
        # Opik deletes the project with its traces, spans, threads and scores; 204 whether or not it existed.
        self.server.store.delete_project(parse_uuid(raw_id, "project id"))
        self._send(204, b"", "")

    def _attachments(self, _rest: str | None = None) -> None:
        raise ApiError(
            501,
            "the local trace store keeps payloads inline and has no attachment storage: set "
            "OPIK_IS_ATTACHMENT_EXTRACTION_ACTIVE=false for the writing process (the variables "
            "`obai-e2e traces start` prints under env include it), so that the SDK leaves large "
            "base64 values in the trace instead of replacing them with a reference to an upload",
        )
