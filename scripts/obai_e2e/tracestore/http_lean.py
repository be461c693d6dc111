"""The HTTP plumbing of the store at a fraction of the standard library's cost per request.

Enters: a request's header lines (the handler's ``rfile``), and the server's accepted connections.
Leaves: :class:`Headers` (what the routes read of a request's headers) or the status and message
the standard parser would have refused it with; each connection handled on a thread that
accepted it (:class:`Acceptors`); an answer written in one piece (:class:`LeanRequests`).

``http.server`` parses headers with the e-mail parser, and ``socketserver`` accepts on one thread
and starts another for every connection: an agent's turn opens a connection or two and sends a
handful of short requests, so those cost more CPU than the store's own work. The headers are read
line by line instead, with the standard library's limits (65,536 bytes a line, 100 headers, no
folded lines), and a connection is handled by the thread that accepted it.
"""
from __future__ import annotations

import socket
import struct
import sys
import threading
import time
from datetime import datetime, timezone
from http import HTTPStatus
from socketserver import _SocketWriter  # type: ignore[attr-defined]
from typing import Any, Callable

_PHRASES = {status.value: status.phrase for status in HTTPStatus}
SERVER_HEADER = f"obai-trace-store Python/{sys.version.split()[0]}"
MAX_LINE = 65536
MAX_HEADERS = 100
SPARE = 4


class HeaderError(Exception):
    """A header block the store refuses (status, message, explanation), as the standard parser would."""

    def __init__(self, status: int, message: str, explain: str) -> None:
        super().__init__(message)
        self.status, self.message, self.explain = status, message, explain


class Headers:
    """A request's headers: names compared without case, every value of a repeated name kept."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[str, list[str]] = {}

    def add(self, name: str, value: str) -> None:
        self._values.setdefault(name.lower(), []).append(value)

    def get(self, name: str, default: Any = None) -> Any:
        found = self._values.get(name.lower())
        return found[0] if found else default

    def get_all(self, name: str, default: Any = None) -> Any:
        return list(self._values.get(name.lower(), ())) or default

    def __getitem__(self, name: str) -> str | None:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._values

    def items(self) -> list[tuple[str, str]]:
        return [(name, value) for name, values in self._values.items() for value in values]


def read_headers(rfile: Any) -> Headers:
    """The header block up to its empty line; :class:`HeaderError` (431, or 400 for a folded line) otherwise.

    A block already in the reader's buffer (a short request arrives whole) is taken in one read;
    otherwise it is read line by line.
    """
    headers = Headers()
    buffered = rfile.peek(MAX_LINE) if hasattr(rfile, "peek") else b""
    end = buffered.find(b"\r\n\r\n")
    if end >= 0 and b"\n\n" not in buffered[:end] and not buffered.startswith((b"\r\n", b"\n")):
        lines = rfile.read(end + 4)[:end].decode("iso-8859-1").split("\r\n")
        if len(lines) > MAX_HEADERS:
            raise HeaderError(431, "Too many headers", f"got more than {MAX_HEADERS} headers")
        for text in lines:
            _add_line(headers, text.rstrip("\r\n"))
        return headers
    count = 0
    while True:
        line = rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise HeaderError(431, "Line too long", "header line")
        if line in (b"\r\n", b"\n", b""):
            return headers
        count += 1
        if count > MAX_HEADERS:
            raise HeaderError(431, "Too many headers", f"got more than {MAX_HEADERS} headers")
        _add_line(headers, line.decode("iso-8859-1").rstrip("\r\n"))


def _add_line(headers: Headers, text: str) -> None:
    if text[:1] in (" ", "\t"):
        raise HeaderError(400, "Bad request", "a folded header line (obsolete line folding)")
    name, sep, value = text.partition(":")
    if not sep or not name or name != name.strip():
        raise HeaderError(400, "Bad request", f"malformed header line {text[:100]!r}")
    headers.add(name, value.strip())


class Acceptors:
    """Threads that accept connections themselves and handle each on the thread that accepted it.

    Every waiting thread blocks in ``accept`` on the listening socket (the kernel wakes one per
    connection); a thread that takes a connection while no other waits starts one first, so there is
    always one to accept, and one that finds :data:`SPARE` others waiting after a connection ends.
    No connection passes from thread to thread, and no thread polls.
    """

    def __init__(self, listener: socket.socket, handle: Callable[[Any, Any], None]) -> None:
        self._listener = listener
        self._handle = handle
        self._waiting = 0
        self._lock = threading.Lock()
        self._stopping = False
        self._kind = (int(listener.family), int(listener.type))

    def start(self) -> None:
        with self._lock:
            self._waiting += 1
        threading.Thread(target=self._accept_loop, name="store-acceptor", daemon=True).start()

    def stop(self) -> None:
        """Wake every waiting thread to end (a shut down listener makes ``accept`` fail at once)."""
        self._stopping = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _accept(self) -> tuple[socket.socket, Any]:
        fd, address = self._listener._accept()  # type: ignore[attr-defined]  # socket.accept, minus its enum lookups
        return socket.socket(*self._kind, 0, fd), address

    def _accept_loop(self) -> None:
        while not self._stopping:
            try:
                connection, address = self._accept()
            except OSError:
                if self._stopping:
                    break
                time.sleep(0.01)  # out of file descriptors, say: try again shortly
                continue
            with self._lock:
                self._waiting -= 1
                alone = self._waiting == 0
            if alone:
                self.start()
            self._handle(connection, address)
            with self._lock:
                if self._waiting >= SPARE:
                    return
                self._waiting += 1
        with self._lock:
            self._waiting -= 1


class LeanRequests:
    """For a ``BaseHTTPRequestHandler``: the request line and headers read as above, an answer written whole,
    and the idle timeout kept by the kernel (a socket with a Python timeout polls before every read and write)."""

    request: socket.socket
    timeout: float | None
    rbufsize: int
    disable_nagle_algorithm: bool

    def setup(self) -> None:
        self.connection = self.request
        if self.timeout is not None:
            seconds = struct.pack("ll", int(self.timeout), 0)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, seconds)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, seconds)
        if self.disable_nagle_algorithm:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.rfile = self.connection.makefile("rb", self.rbufsize)
        self.wfile = _SocketWriter(self.connection)

    raw_requestline: bytes
    rfile: Any
    wfile: Any
    command: str | None
    path: str
    requestline: str
    request_version: str
    default_request_version: str
    close_connection: bool
    headers: Any

    def parse_request(self) -> bool:
        """The request line as the standard library reads it; the headers by :func:`http_lean.read_headers`."""
        self.command = None
        self.request_version = self.default_request_version
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if len(words) != 3:
            if words:
                self.send_error(400, f"Bad request syntax ({self.requestline[:200]!r})")
            return False
        command, path, version = words
        major, dot, minor = version[5:].partition(".")
        if not version.startswith("HTTP/") or not dot or not (major + minor).isdigit() or len(major + minor) > 20:
            self.send_error(400, f"Bad request version ({version[:50]!r})")
            return False
        if int(major) >= 2:
            self.send_error(505, f"Invalid HTTP version ({version[5:][:50]})")
            return False
        self.request_version = version
        modern = (int(major), int(minor)) >= (1, 1)
        self.close_connection = not modern
        self.command, self.path = command, "/" + path.lstrip("/") if path.startswith("//") else path
        try:
            self.headers = read_headers(self.rfile)
        except HeaderError as exc:
            self.send_error(exc.status, exc.message, exc.explain)
            return False
        connection = (self.headers.get("Connection") or "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        if modern and (self.headers.get("Expect") or "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return True

    _date: tuple[int, str] = (0, "")

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, formatted once a second."""
        if timestamp is not None:
            return super().date_time_string(timestamp)  # type: ignore[misc]
        now = int(time.time())
        if LeanRequests._date[0] != now:
            LeanRequests._date = (now, super().date_time_string(now))  # type: ignore[misc]
        return LeanRequests._date[1]

    # --- answers ----------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        """The whole answer in one write (status line, headers, body)."""
        self.finish_body()
        self.log_request(status)
        lines = [f"HTTP/1.1 {status} {_PHRASES.get(status, 'Unknown')}\r\nServer: {SERVER_HEADER}\r\n"
                 f"Date: {self.date_time_string()}\r\n"]
        if status != 204:
            if content_type:
                lines.append(f"Content-Type: {content_type}\r\n")
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("X-Content-Type-Options: nosniff\r\n")
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}\r\n")
        if self.close_connection:
            lines.append("Connection: close\r\n")
        head = "".join(lines).encode("latin-1") + b"\r\n"
        self.wfile.write(head + body if status != 204 and self.command != "HEAD" and body else head)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if isinstance(code, HTTPStatus):
            code = code.value
        if isinstance(code, int) and code >= 400:
            self.log_message('"%s" %s', self.requestline[:300], code)

    def log_message(self, format: str, *args: Any) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        sys.stderr.write(f"{stamp} trace-store: {format % args}\n")

