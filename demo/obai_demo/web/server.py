"""The web chat: a page, a streaming answer endpoint and a health check, on loopback only.

``GET /`` is the chat page (inline CSS and script under a nonce; no other asset);
``POST /api/ask`` takes ``{"query", "session", "tag"}`` (the tag may also come as the
``X-Obai-Trace-Tag`` header) and runs one hub turn, traced as ``obai-demo ask`` traces
it, then streams the answer as newline-delimited JSON events::

    {"type": "token", "text": "..."}                                   one or more
    {"type": "done", "exit_code": 0, "outcome": "answered", "notice": null}
    {"type": "error", "kind": "error", "message": "..."}               only with ui_error_banner

Failures before the stream: 400 bad request, 502 ``upstream`` (the hub raised), 503
``outage`` (the backend is down: the outage file exists). ``GET /healthz`` is 200 while the
backend is up, else 503.
"""
from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import secrets
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from .. import faults as fault_table
from .. import hub, tracing
from ..jobs import SESSION_ID
from ..settings import Settings

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024
MAX_QUERY_CHARS = 4000
MAX_TAG_CHARS = 200
TAG_HEADER = "X-Obai-Trace-Tag"
WORDS_PER_CHUNK = 4
OUTCOMES = {0: "answered", 1: "refused", 4: "unknown_job"}
UNKNOWN_JOB_NOTICE = "This session has no such job."
UPSTREAM_MESSAGE = "The assistant failed to answer. Please try again."
OUTAGE_MESSAGE = "The assistant is unavailable right now."
SPURIOUS_MESSAGE = "Lost connection to the assistant. Please try again."
_TAG = re.compile(r"^[\x21-\x7e]+$")
EXIT_PORT_TAKEN = 3


class TurnAborted(RuntimeError):
    """A turn held by the hang fault was released because the server is stopping."""


class BadRequest(ValueError):
    """A request the chat cannot take; the message says what is wrong."""


def page(nonce: str) -> bytes:
    template = resources.files(__package__).joinpath("chat.html").read_text(encoding="utf-8")
    return template.replace("{{nonce}}", nonce).encode("utf-8")


def chunks(text: str, words: int = WORDS_PER_CHUNK) -> list[str]:
    """``text`` cut into pieces of a few words each; joined they give ``text`` back exactly."""
    pieces = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    return ["".join(pieces[i:i + words]) for i in range(0, len(pieces), words)]


def as_markup(answer: str) -> str:
    """The answer as the HTML a markdown step would make of it (what ui_raw_markup shows as text)."""
    paragraphs = [p for p in answer.split("\n\n") if p]
    return "".join("<p>" + html.escape(p).replace("\n", "<br>") + "</p>" for p in paragraphs)


class ChatServer(ThreadingHTTPServer):
    """The web chat over the hub; bound to 127.0.0.1."""

    daemon_threads = True

    def __init__(self, port: int, settings: Settings, *, trace: bool = True, outage_file: Path | None = None,
                 log: bool = True) -> None:
        self.settings = settings
        self.trace = trace
        self.outage_file = outage_file
        self.log = log
        self.stopping = threading.Event()
        super().__init__((HOST, port), ChatHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def backend_up(self) -> bool:
        return not (self.outage_file is not None and self.outage_file.exists())

    def hold(self) -> None:
        """The hang fault on a server: this request waits until the server stops."""
        self.stopping.wait()
        raise TurnAborted("the server stopped while the turn was held by the hang fault")

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer
    server_version = "obai-demo-chat"
    sys_version = ""

    # ------------------------------------------------------------------ routing

    def do_GET(self) -> None:
        if not self._host_ok():
            return
        path = urlsplit(self.path).path
        if path == "/":
            nonce = secrets.token_urlsafe(16)
            self._send(200, page(nonce), "text/html; charset=utf-8", csp=nonce)
        elif path == "/healthz":
            up = self.server.backend_up()
            self._json(200 if up else 503, {"status": "ok" if up else "down", "backend": "up" if up else "down"})
        else:
            self._json(404, {"kind": "not_found", "message": f"no page at {path}"})

    def do_POST(self) -> None:
        if not self._host_ok():
            return
        if urlsplit(self.path).path != "/api/ask":
            self._json(404, {"kind": "not_found", "message": "POST goes to /api/ask"})
            return
        try:
            query, session, tag = self._ask_request()
        except BadRequest as exc:
            self._json(400, {"kind": "bad_request", "message": str(exc)})
            return
        if not self.server.backend_up():
            self._json(503, {"kind": "outage", "message": OUTAGE_MESSAGE})
            return
        settings = dataclasses.replace(self.server.settings, tag=tag)
        try:
            result = hub.run_turn(query, session, settings, trace=self.server.trace, channel="ui",
                                  on_hang=self.server.hold)
        except TurnAborted:
            self._json(503, {"kind": "outage", "message": OUTAGE_MESSAGE})
            return
        except Exception:
            self._note("the hub raised:\n" + traceback.format_exc().rstrip())
            self._json(502, {"kind": "upstream", "message": UPSTREAM_MESSAGE})
            self._flush_later()
            return
        for note in result.notes:
            self._note(note)
        active = fault_table.active(settings.faults, query) & set(fault_table.UI_FAULTS)
        self._stream(result, active)
        self._flush_later()

    def do_PUT(self) -> None:
        self._json(405, {"kind": "method_not_allowed", "message": "use GET or POST"})

    do_DELETE = do_PATCH = do_PUT

    # ------------------------------------------------------------------ the answer stream

    def _events(self, result: hub.TurnResult, active: set[str]) -> Iterator[dict[str, Any] | float]:
        """The events of one answer; a float is a pause in seconds."""
        text = as_markup(result.answer) if "ui_raw_markup" in active else result.answer
        pieces = chunks(text)
        if "ui_truncated" in active:
            pieces = pieces[:1]
        stall = self.server.settings.ui_stall_ms / 1000
        if "ui_slow_first_token" in active:
            yield stall
        for i, piece in enumerate(pieces):
            yield {"type": "token", "text": piece}
            if i == 0 and "ui_slow_done" in active:
                yield stall
        notice = UNKNOWN_JOB_NOTICE if result.exit_code == 4 else None
        yield {"type": "done", "exit_code": result.exit_code,
               "outcome": OUTCOMES.get(result.exit_code, "failed"), "notice": notice}
        if "ui_error_banner" in active:
            yield {"type": "error", "kind": "error", "message": SPURIOUS_MESSAGE}

    def _stream(self, result: hub.TurnResult, active: set[str]) -> None:
        self.send_response(200)
        self._common_headers("application/x-ndjson; charset=utf-8")
        self.end_headers()
        try:
            for event in self._events(result, active):
                if isinstance(event, float):
                    if self.server.stopping.wait(event):
                        return
                    continue
                self.wfile.write(json.dumps(event, ensure_ascii=False).encode("utf-8") + b"\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._note("the client went away before the answer was complete")

    # ------------------------------------------------------------------ request parsing

    def _ask_request(self) -> tuple[str, str, str | None]:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise BadRequest("send the question as application/json")
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            raise BadRequest("a Content-Length header is required") from None
        if length < 0 or length > MAX_BODY_BYTES:
            raise BadRequest(f"the request body must be at most {MAX_BODY_BYTES} bytes")
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise BadRequest("the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise BadRequest('the request body must be an object {"query", "session", "tag"}')
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise BadRequest("query must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise BadRequest(f"query must be at most {MAX_QUERY_CHARS} characters")
        session = body.get("session")
        if not isinstance(session, str) or not SESSION_ID.match(session):
            raise BadRequest("session must be letters, digits, '.', '_' or '-' (at most 128)")
        return query.strip(), session, self._tag(body.get("tag"))

    def _tag(self, field: Any) -> str | None:
        header = self.headers.get(TAG_HEADER)
        if field is not None and not isinstance(field, str):
            raise BadRequest("tag must be a string")
        field = field or None
        if header and field and header != field:
            raise BadRequest(f"the {TAG_HEADER} header and the tag field differ")
        tag = field or header or None
        if tag is not None and (len(tag) > MAX_TAG_CHARS or not _TAG.match(tag)):
            raise BadRequest(f"tag must be 1 to {MAX_TAG_CHARS} printable ASCII characters without spaces")
        return tag

    def _host_ok(self) -> bool:
        """Only this server's own loopback origin may talk to it (no DNS rebinding, no cross-site posts)."""
        allowed = {f"{HOST}:{self.server.port}", f"localhost:{self.server.port}"}
        host = self.headers.get("Host", "")
        origin = self.headers.get("Origin")
        if host not in allowed or (origin is not None and urlsplit(origin).netloc not in allowed):
            self._json(403, {"kind": "forbidden", "message": "this chat answers its own loopback origin only"})
            return False
        return True

    # ------------------------------------------------------------------ responses

    def _common_headers(self, ctype: str, csp: str | None = None) -> None:
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if csp is not None:
            self.send_header(
                "Content-Security-Policy",
                f"default-src 'none'; script-src 'nonce-{csp}'; style-src 'nonce-{csp}'; connect-src 'self'; "
                "img-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
            )

    def _send(self, status: int, body: bytes, ctype: str, csp: str | None = None) -> None:
        self.send_response(status)
        self._common_headers(ctype, csp)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status: int, data: dict[str, Any]) -> None:
        self._send(status, json.dumps(data).encode("utf-8") + b"\n", "application/json")

    def _flush_later(self) -> None:
        """Hand the turn's trace over now rather than at the SDK's next batch, without holding the reply."""
        if not self.server.trace:
            return

        def flush() -> None:
            if not tracing.flush():
                self._note("the trace backend did not take the trace in time")

        threading.Thread(target=flush, daemon=True).start()

    def _note(self, message: str) -> None:
        if self.server.log:
            print(f"obai-demo serve: {message}", file=sys.stderr, flush=True)

    def log_message(self, format: str, *args: Any) -> None:
        self._note(f"{self.address_string()} {format % args}")


def serve(port: int, settings: Settings, outage_file: Path | None) -> int:
    """Run the chat until SIGTERM or SIGINT; print one JSON line when it is ready."""
    import signal

    try:
        server = ChatServer(port, settings, outage_file=outage_file)
    except OSError as exc:
        print(f"obai-demo: cannot listen on {HOST}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_PORT_TAKEN
    tracing.warm_up()

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ready = {"status": "serving", "url": server.url, "health": server.url + "healthz", "port": server.port,
             "pid": os.getpid(), "outage_file": str(outage_file) if outage_file else None}
    print(json.dumps(ready), flush=True)
    started = time.monotonic()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.stopping.set()
        server.server_close()
    delivered = tracing.finish()
    print(f"obai-demo serve: stopped after {time.monotonic() - started:.1f} s"
          + ("" if delivered else "; some traces were not delivered"), file=sys.stderr, flush=True)
    return 0
