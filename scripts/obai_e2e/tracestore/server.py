"""The HTTP face of the store: the part of Opik's REST API the ``opik`` SDK uses, and two pages.

Enters: HTTP requests on loopback. Leaves: Opik-shaped JSON (errors as
``{"errors": ["..."]}``), and read-only HTML pages of recent traces and of one trace.

Every request first passes :mod:`guard` (Host, Origin, the token or a turn key) and, with a turn's
key, :mod:`access` (no delete, none of the store's own routes); a write must be JSON. A
request the handler cannot serve ends in a JSON error, never in a dropped or hanging
connection; a failure inside a handler is answered with 500 and the server goes on.
"""
from __future__ import annotations

import json
import re
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs

from . import access, feedback, guard, otlp, pages
from .admin_routes import SERVICE, AdminRoutes
from .apierror import ApiError
from .bodies import DEFAULT_MAX_BODY_BYTES, MAX_DECODED_BYTES, BodyReader
from .db import Store
from .http_lean import Acceptors, LeanRequests
from .otlp_ids import id_needs
from .otlp_map import CURRENT, to_writes
from .payloads import SPAN, TRACE, Kind, parse_batch, parse_search, parse_update, parse_write
from .refusals import Refusals
from .thread_routes import ThreadRoutes
from .timeutil import DEFAULT_PROJECT, parse_uuid
from .turnkeys import HARNESS, KeyCheck, Principal
from .rows import compact_json, encode

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MAX_DECODED_BYTES", "SERVICE", "StoreServer", "make_server"]

INDEX_SIZE = 100
REFUSED_FIELD = "obai_refused_writes"
PAGE_MAX_SPANS = 2000

_KINDS = {"traces": TRACE, "spans": SPAN}
_ENTITY = r"/api/v1/private/(traces|spans)"
_ID = r"([0-9A-Fa-f-]{1,64})"  # anything else after traces/ or spans/ is an unknown endpoint
OTLP_TRACES = "/api/v1/private/otel/v1/traces"

# Path pattern → {method: handler method name}; the first matching pattern decides.
_ROUTES: list[tuple[re.Pattern[str], dict[str, str]]] = [
    (re.compile(r"/api/is-alive/ping"), {"GET": "_ping"}),
    (re.compile(r"/api/is-alive/ver"), {"GET": "_version"}),
    (re.compile(r"/api/obai-trace-store/info"), {"GET": "_info"}),
    (re.compile(r"/api/obai-trace-store/refusals"), {"GET": "_refusals"}),
    (re.compile(r"/api/v1/private/traces/threads/search"), {"POST": "_thread_search"}),
    (re.compile(r"/api/v1/private/traces/threads/retrieve"), {"POST": "_thread_get"}),
    (re.compile(r"/api/v1/private/traces/threads"), {"GET": "_thread_page"}),
    (re.compile(r"/api/v1/private/traces/threads/close"), {"PUT": "_thread_close"}),
    (re.compile(r"/api/v1/private/traces/threads/open"), {"PUT": "_thread_open"}),
    (re.compile(r"/api/v1/private/traces/threads/feedback-scores"), {"PUT": "_thread_scores"}),
    (re.compile(r"/api/v1/private/traces/threads/feedback-scores/delete"), {"POST": "_thread_score_delete"}),
    (re.compile(_ENTITY + r"/batch"), {"POST": "_create_batch"}),
    (re.compile(_ENTITY + r"/search"), {"POST": "_search"}),
    (re.compile(_ENTITY + r"/feedback-scores"), {"PUT": "_score_batch"}),
    (re.compile(_ENTITY), {"POST": "_create_one"}),
    (re.compile(_ENTITY + "/" + _ID), {"GET": "_get", "PATCH": "_patch"}),
    (re.compile(_ENTITY + "/" + _ID + r"/feedback-scores"), {"PUT": "_score_one"}),
    (re.compile(_ENTITY + "/" + _ID + r"/feedback-scores/delete"), {"POST": "_score_delete"}),
    (re.compile(re.escape(OTLP_TRACES)), {"POST": "_otel_traces"}),
    (re.compile(r"/api/v1/private/otel/v1/metrics"), {"POST": "_otel_metrics"}),
    (re.compile(r"/api/v1/private/projects/retrieve"), {"POST": "_project_by_name"}),
    (re.compile(r"/api/v1/private/projects/" + _ID), {"GET": "_project_by_id", "DELETE": "_project_delete"}),
    (re.compile(r"/api/v1/private/attachment(/.*)?"), {m: "_attachments" for m in ("GET", "POST", "PUT", "DELETE")}),
    (re.compile(r"/|/traces"), {"GET": "_index_page", "HEAD": "_index_page"}),
    (re.compile(r"/traces/([^/]{1,200})"), {"GET": "_trace_page", "HEAD": "_trace_page"}),
]


# The routes a path can match: the one of a path without an id or a page, found by a lookup; else all of them.
_FIXED = {path: [(pattern, methods)] for pattern, methods in reversed(_ROUTES)
          for path in (pattern.pattern.replace("\\", "").replace("(traces|spans)", kind) for kind in ("traces", "spans"))
          if not any(ch in path for ch in "()[]|*+?")}


def _routes_for(path: str) -> list[tuple[re.Pattern[str], dict[str, str]]]:
    return _FIXED.get(path) or _ROUTES


class StoreServer(HTTPServer):
    """An HTTP server that carries the store, its limits and its access token; each connection is
    handled on the thread that accepted it (:class:`http_lean.Acceptors`)."""

    allow_reuse_address = True
    # Python's default backlog of 5 resets connections when hundreds of writers flush at once
    # (every agent process of a parallel run ends its turn with one); the kernel caps it at somaxconn.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], store: Store, max_body_bytes: int, info: dict, token: str) -> None:
        if not token:
            raise ValueError("the trace store needs an access token")
        self.store = store
        self.max_body_bytes = max_body_bytes
        self.info = info
        self.token = token
        self.keys = KeyCheck(token)
        self.refusals = Refusals()
        self._stop, self._served = threading.Event(), threading.Event()
        self._served.set()
        super().__init__(address, Handler)
        self.acceptors = Acceptors(self.socket, self._handle_connection)
        self.port = self.server_address[1]

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until :meth:`shutdown`: the acceptor threads do the work (``poll_interval`` is not needed)."""
        self._stop.clear()
        self._served.clear()
        try:
            self.acceptors.start()
            self._stop.wait()
        finally:
            self.acceptors.stop()
            self._served.set()

    def shutdown(self) -> None:
        self._stop.set()
        self._served.wait()

    def _handle_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        if hasattr(self, "acceptors"):  # not yet when binding failed
            self.acceptors.stop()
        super().server_close()


class Handler(ThreadRoutes, AdminRoutes, BodyReader, LeanRequests, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = SERVICE
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 120
    # _send writes headers and body at once, but with Nagle's algorithm any answer sent in
    # two writes would wait for the client's delayed ACK (~40 ms) on a keep-alive connection.
    disable_nagle_algorithm = True
    server: StoreServer
    principal: Principal = HARNESS

    # --- routing ----------------------------------------------------------------------------

    def _dispatch(self) -> None:
        self._body_consumed = False
        self._body_value = None
        self.principal = HARNESS
        path, _, self.query = self.path.partition("?")
        path = path.rstrip("/") or "/"
        self.route_path = path
        try:
            principal = guard.admit(self.command, path, self.headers, port=self.server.port, keys=self.server.keys,
                                    data_dir=str(self.server.info.get("data_dir") or ""))
            if principal is not None:
                self.principal = principal
                access.check(principal, self.command, path, self.server.store)
            for pattern, methods in _routes_for(path):
                match = pattern.fullmatch(path)
                if match is None:
                    continue
                handler = methods.get(self.command)
                if handler is None:
                    allowed = ", ".join(methods)
                    raise ApiError(405, f"method {self.command} is not allowed on {path}; allowed: {allowed}")
                guard.check_content_type(self.command, self.headers,
                                         otlp.MEDIA_TYPES if handler.startswith("_otel") else guard.JSON_ONLY)
                getattr(self, handler)(*match.groups())
                return
            raise ApiError(404, f"no such endpoint: {self.command} {path[:300]}")
        except ApiError as exc:
            self._note_refusal(path, exc)
            self._send_error(exc)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            self.log_message("internal error on %s %s\n%s", self.command, self.path[:300], traceback.format_exc())
            self.close_connection = True
            try:
                self._send_error(ApiError(500, f"internal error in the trace store: {type(exc).__name__}: {exc}"))
            except OSError:
                pass

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def _note_refusal(self, path: str, exc: ApiError) -> None:
        """A refused write is kept under its project (the refusal's, the ``projectName`` header's or the body's),
        with the turn whose key made it, so that the unit concerned can name it; searches and lookups are reads,
        whatever their method."""
        if not (400 <= exc.status < 500 and path.startswith("/api/")) or path.endswith(("/search", "/retrieve")):
            return
        if exc.project is None and self.command not in guard.BODY_METHODS and not access.is_delete(self.command, path):
            return
        writer = self.principal.name if self.principal.is_turn else None
        project = exc.project or self.headers.get("projectName") or body_project(self._body_value)
        if project or writer:
            self.server.refusals.record(project or "", exc.status, exc.message, writer)

    def _send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        body = compact_json(data).encode("utf-8")
        self._send(status, body, "application/json", headers)

    def _send_error(self, exc: ApiError) -> None:
        if getattr(self, "route_path", "/api").startswith("/api"):
            self._send_json(exc.status, exc.body(), exc.headers)
        else:
            self._send(exc.status, pages.error_page(exc.status, exc.message), pages.CONTENT_TYPE,
                       {**pages.HEADERS, **exc.headers})

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors raised by the request parser (bad request line, oversized headers) as JSON."""
        self.close_connection = True
        self._body_consumed = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        text = message or phrase
        if explain:
            text = f"{text}: {explain}"
        try:
            self._send_json(code, {"errors": [text]})
        except OSError:
            pass

    def _json(self) -> Any:
        self._body_value = self.json_body(self.server.max_body_bytes)
        return self._body_value

    # --- endpoints --------------------------------------------------------------------------

    def _create_batch(self, plural: str) -> None:
        kind = _KINDS[plural]
        self.server.store.write(kind, parse_batch(self._json(), kind), by=self.principal)
        self._send(204, b"", "")

    def _create_one(self, plural: str) -> None:
        kind = _KINDS[plural]
        doc = parse_write(self._json(), kind, "request body")
        # Opik's single span create keeps a re-sent span's first non-empty values, field by field.
        self.server.store.write(kind, [doc], first_wins=kind is SPAN, by=self.principal)
        self._send(201, b"", "", {"Location": f"/api/v1/private/{plural}/{doc['id']}"})

    def _search(self, plural: str) -> None:
        kind = _KINDS[plural]
        found = self.server.store.search(kind, parse_search(self._json(), kind), by=self.principal, raw=True)
        body = "".join(encode(self._with_refusals(kind, item)) + "\n" for item in found).encode("utf-8")
        self._send(200, body, "application/x-ndjson")

    def _get(self, plural: str, raw_id: str) -> None:
        kind = _KINDS[plural]
        found = self.server.store.get(kind, parse_uuid(raw_id, f"{kind.name} id"), by=self.principal, raw=True)
        self._send(200, encode(self._with_refusals(kind, found)).encode("utf-8"), "application/json")

    def _with_refusals(self, kind: Kind, item: dict) -> dict:
        """A trace as the harness reads it carries the writes its creator's turn was refused, when there are any
        (``obai_refused_writes``: the one field Opik has not; the SDK keeps fields it does not know)."""
        creator = item.get("created_by")
        if kind is TRACE and not self.principal.is_turn and creator and creator.startswith("turn:"):
            refused = self.server.refusals.of_writer(creator)
            if refused:
                item[REFUSED_FIELD] = refused
        return item

    def _patch(self, plural: str, raw_id: str) -> None:
        kind = _KINDS[plural]
        entity_id = parse_uuid(raw_id, f"{kind.name} id")
        self.server.store.update(kind, entity_id, parse_update(self._json(), kind), by=self.principal)
        self._send(204, b"", "")

    def _score_batch(self, plural: str) -> None:
        kind = _KINDS[plural]
        self.server.store.write_scores(kind, feedback.parse_batch(self._json()), by=self.principal)
        self._send(204, b"", "")

    def _score_one(self, plural: str, raw_id: str) -> None:
        kind = _KINDS[plural]
        entity_id = parse_uuid(raw_id, f"{kind.name} id")
        score = feedback.parse_score(self._json(), "request body", entity_id)
        project_id = self.server.store.project_of(kind, entity_id)
        if project_id is not None:
            score["project_id"] = project_id
        self.server.store.write_scores(kind, [score], by=self.principal)
        self._send(204, b"", "")

    def _score_delete(self, plural: str, raw_id: str) -> None:
        kind = _KINDS[plural]
        entity_id = parse_uuid(raw_id, f"{kind.name} id")
        self.server.store.delete_score(kind, entity_id, feedback.parse_delete(self._json()))
        self._send(204, b"", "")

    def _otel_traces(self) -> None:
        """OTLP/HTTP trace export, at Opik's path: the project comes from the ``projectName`` header."""
        media = guard.media_type(self.headers)
        request = otlp.decode_request(self.decoded_body(self.server.max_body_bytes), media)
        project = (self.headers.get("projectName") or "").strip() or DEFAULT_PROJECT
        store = self.server.store
        traces, spans = to_writes(request, project, store.otel_ids(project, id_needs(request)),
                                  self.server.info.get("opik_version") or CURRENT)
        self._body_value = {"project_name": project}
        if traces:
            store.write(TRACE, [parse_write(t, TRACE, f"trace of OTel root span {t['name'][:80]!r}") for t in traces],
                        by=self.principal)
        if spans:
            store.write(SPAN, [parse_write(s, SPAN, f"OTel span {s['name'][:80]!r}") for s in spans],
                        by=self.principal)
        body, content_type = otlp.answer(media)
        self._send(200, body, content_type)

    def _otel_metrics(self) -> None:
        raise ApiError(501, "OpenTelemetry metrics ingestion is not supported (nor is it by Opik); export traces only")

    # --- pages ------------------------------------------------------------------------------

    def _page_headers(self, base: dict[str, str] = pages.HEADERS) -> tuple[str, dict[str, str]]:
        """The key to carry in the page's links and the headers to send; 401 without the page key."""
        key = guard.page_access(self.query, token=self.server.token,
                                data_dir=str(self.server.info.get("data_dir") or ""))
        return key, base

    def _index_page(self) -> None:
        key, headers = self._page_headers()
        try:
            query = parse_qs(self.query, max_num_fields=10)
        except ValueError:
            raise ApiError(400, "too many query parameters; the index takes only 'before'") from None
        before = query.get("before", [None])[0]
        if before is not None:
            before = parse_uuid(before, "before")
        traces = self.server.store.recent_traces(INDEX_SIZE + 1, before)
        more = traces[INDEX_SIZE]["id"] if len(traces) > INDEX_SIZE else None
        html = pages.index_page(traces[:INDEX_SIZE], self.server.info.get("data_dir", ""), more, key=key)
        self._send(200, html, pages.CONTENT_TYPE, headers)

    def _trace_page(self, raw_id: str) -> None:
        key, headers = self._page_headers(pages.TRACE_HEADERS)
        trace_id = parse_uuid(raw_id, "trace id")
        trace, spans, total = self.server.store.trace_with_spans(trace_id, PAGE_MAX_SPANS)
        self._send(200, pages.trace_page(trace, spans, total, key=key), pages.CONTENT_TYPE, headers)


def body_project(body: Any) -> str | None:
    """The project a request body names: its own ``project_name``, else that of its first item (Opik's
    TypeScript SDK names the project in the body of each write, not in a header)."""
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("project_name"), str):
        return body["project_name"]
    for plural in ("traces", "spans", "scores"):
        items = body.get(plural)
        first = items[0] if isinstance(items, list) and items else None
        if isinstance(first, dict) and isinstance(first.get("project_name"), str):
            return first["project_name"]
    return None


def make_server(store: Store, host: str, port: int, max_body_bytes: int, info: dict, *, token: str) -> StoreServer:
    """Bind (raises OSError when the port is taken); call ``serve_forever`` to run."""
    return StoreServer((host, port), store, max_body_bytes, info, token)
