"""The HTTP face of the store: the part of Opik's REST API the ``opik`` SDK uses.

Every answer that is not a success carries an Opik-style body ``{"errors": ["..."]}``.
A request the handler cannot serve ends in a JSON error, never in a dropped or hanging
connection; a failure inside a handler is answered with 500 and the server goes on.
"""
from __future__ import annotations

import json
import os
import re
import sys
import traceback
import zlib
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .apierror import ApiError, bad_request
from .db import Store
from .payloads import SPAN, TRACE, parse_batch, parse_search, parse_update, parse_write
from .timeutil import parse_uuid

SERVICE = "obai-trace-store"
DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024
# A gzip body may expand a lot; past this many bytes it is refused instead of inflated.
MAX_DECODED_BYTES = 128 * 1024 * 1024
# A refused body up to this size is still read, so that the client sees the answer instead
# of a connection reset while it is still sending.
_DRAIN_LIMIT_BYTES = 64 * 1024 * 1024

_KINDS = {"traces": TRACE, "spans": SPAN}

# Path pattern → {method: handler method name}; the first matching pattern decides.
_ROUTES: list[tuple[re.Pattern[str], dict[str, str]]] = [
    (re.compile(r"/api/is-alive/ping"), {"GET": "_ping"}),
    (re.compile(r"/api/is-alive/ver"), {"GET": "_version"}),
    (re.compile(r"/api/obai-trace-store/info"), {"GET": "_info"}),
    (re.compile(r"/api/v1/private/(traces|spans)/batch"), {"POST": "_create_batch"}),
    (re.compile(r"/api/v1/private/(traces|spans)/search"), {"POST": "_search"}),
    (re.compile(r"/api/v1/private/(traces|spans)"), {"POST": "_create_one"}),
    (re.compile(r"/api/v1/private/(traces|spans)/([^/]+)"), {"GET": "_get", "PATCH": "_patch"}),
]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class StoreServer(ThreadingHTTPServer):
    """A threading HTTP server that carries the store and its limits."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], store: Store, max_body_bytes: int, info: dict) -> None:
        self.store = store
        self.max_body_bytes = max_body_bytes
        self.info = info
        super().__init__(address, Handler)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = SERVICE
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 120
    # Headers and body go out in two writes; with Nagle's algorithm the second one waits
    # for the client's delayed ACK (~40 ms) on every keep-alive request.
    disable_nagle_algorithm = True
    server: StoreServer

    # --- routing ----------------------------------------------------------------------------

    def _dispatch(self) -> None:
        self._body_consumed = False
        try:
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            for pattern, methods in _ROUTES:
                match = pattern.fullmatch(path)
                if match is None:
                    continue
                handler = methods.get(self.command)
                if handler is None:
                    allowed = ", ".join(methods)
                    raise ApiError(405, f"method {self.command} is not allowed on {path}; allowed: {allowed}")
                getattr(self, handler)(*match.groups())
                return
            raise ApiError(404, f"no such endpoint: {self.command} {path}")
        except ApiError as exc:
            self._send_json(exc.status, exc.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            self.log_message("internal error on %s %s\n%s", self.command, self.path, traceback.format_exc())
            self.close_connection = True
            try:
                self._send_json(500, {"errors": [f"internal error in the trace store: {type(exc).__name__}: {exc}"]})
            except OSError:
                pass

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    # --- bodies -----------------------------------------------------------------------------

    def _content_length(self) -> int:
        raw = self.headers.get("Content-Length")
        if raw is None:
            return 0
        try:
            length = int(raw)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            raise bad_request(f"Content-Length must be a non-negative integer, got {raw!r}")
        return length

    def _read_chunked(self, limit: int) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise bad_request("malformed chunked request body") from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            total += size
            if total > limit:
                self.close_connection = True
                raise ApiError(413, f"request body is larger than the limit of {limit} bytes")
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _read_raw_body(self) -> bytes:
        self._body_consumed = True
        limit = self.server.max_body_bytes
        encoding = self.headers.get("Transfer-Encoding", "").strip().lower()
        if encoding == "chunked":
            return self._read_chunked(limit)
        if encoding:
            self.close_connection = True
            raise ApiError(501, f"Transfer-Encoding {encoding!r} is not supported; send Content-Length or chunked")
        length = self._content_length()
        if length > limit:
            if length <= _DRAIN_LIMIT_BYTES:
                self._skip(length)
            else:
                self.close_connection = True
            raise ApiError(
                413, f"request body of {length} bytes is larger than the limit of {limit} bytes; send smaller batches"
            )
        data = self.rfile.read(length)
        if len(data) < length:
            raise ConnectionResetError("client closed the connection mid-body")
        return data

    def _skip(self, length: int) -> None:
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 20))
            if not chunk:
                self.close_connection = True
                return
            length -= len(chunk)

    def _finish_body(self) -> None:
        """Read and drop a body the route did not use, so the connection stays usable."""
        if getattr(self, "_body_consumed", True):
            return
        self._body_consumed = True
        try:
            if self.headers.get("Transfer-Encoding", "").strip().lower() == "chunked":
                self._read_chunked(_DRAIN_LIMIT_BYTES)
                return
            length = self._content_length()
        except ApiError:
            self.close_connection = True
            return
        if length > _DRAIN_LIMIT_BYTES:
            self.close_connection = True
        else:
            self._skip(length)

    @staticmethod
    def _gunzip(data: bytes) -> bytes:
        out: list[bytes] = []
        total = 0
        while data:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                chunk = inflater.decompress(data, MAX_DECODED_BYTES - total + 1)
            except zlib.error as exc:
                raise bad_request(f"request body is not valid gzip ({exc}); it was sent with Content-Encoding: gzip")
            total += len(chunk)
            if total > MAX_DECODED_BYTES or inflater.unconsumed_tail:
                raise ApiError(413, f"request body inflates to more than {MAX_DECODED_BYTES} bytes")
            if not inflater.eof:
                raise bad_request("request body is truncated gzip; it was sent with Content-Encoding: gzip")
            out.append(chunk)
            data = inflater.unused_data
        return b"".join(out)

    def _json_body(self) -> Any:
        data = self._read_raw_body()
        encoding = self.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding == "gzip":
            data = self._gunzip(data)
        elif encoding not in ("", "identity"):
            raise ApiError(415, f"Content-Encoding {encoding!r} is not supported; use gzip or none")
        if not data.strip():
            raise bad_request("request body is empty; expected a JSON object")
        try:
            return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except UnicodeDecodeError:
            raise bad_request("request body is not UTF-8 text; expected a JSON object") from None
        except ValueError as exc:
            raise bad_request(f"request body is not valid JSON: {exc}") from None
        except RecursionError:
            raise bad_request("request body nests too deeply; expected a JSON object of traces or spans") from None

    # --- answers ----------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self._finish_body()
        self.send_response(status)
        if status != 204:
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if status != 204 and self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._send(status, body, "application/json")

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

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if isinstance(code, HTTPStatus):
            code = code.value
        if isinstance(code, int) and code >= 400:
            self.log_message('"%s" %s', self.requestline, code)

    def log_message(self, format: str, *args: Any) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        sys.stderr.write(f"{stamp} trace-store: {format % args}\n")

    # --- endpoints --------------------------------------------------------------------------

    def _ping(self) -> None:
        self._send_json(200, {"healthy": True})

    def _version(self) -> None:
        self._send_json(200, {"version": SERVICE})

    def _info(self) -> None:
        self._send_json(200, {**self.server.info, "pid": os.getpid(), "counts": self.server.store.counts()})

    def _create_batch(self, plural: str) -> None:
        kind = _KINDS[plural]
        self.server.store.write(kind, parse_batch(self._json_body(), kind))
        self._send(204, b"", "")

    def _create_one(self, plural: str) -> None:
        kind = _KINDS[plural]
        doc = parse_write(self._json_body(), kind, "request body")
        self.server.store.write(kind, [doc])
        self._send(201, b"", "", {"Location": f"/api/v1/private/{plural}/{doc['id']}"})

    def _search(self, plural: str) -> None:
        kind = _KINDS[plural]
        found = self.server.store.search(kind, parse_search(self._json_body(), kind))
        body = b"".join(
            json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n" for item in found
        )
        self._send(200, body, "application/x-ndjson")

    def _get(self, plural: str, raw_id: str) -> None:
        kind = _KINDS[plural]
        self._send_json(200, self.server.store.get(kind, parse_uuid(raw_id, f"{kind.name} id")))

    def _patch(self, plural: str, raw_id: str) -> None:
        kind = _KINDS[plural]
        entity_id = parse_uuid(raw_id, f"{kind.name} id")
        self.server.store.update(kind, entity_id, parse_update(self._json_body(), kind))
        self._send(204, b"", "")


def make_server(store: Store, host: str, port: int, max_body_bytes: int, info: dict) -> StoreServer:
    """Bind (raises OSError when the port is taken); call ``serve_forever`` to run."""
    return StoreServer((host, port), store, max_body_bytes, info)
