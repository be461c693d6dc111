"""Request bodies off the wire: framing, size limits, gzip, JSON and text repair.

Enters: the request's headers and socket stream. Leaves: the body as a JSON value, or an
:class:`ApiError` (400, 413, 415, 501) naming what is wrong with it. A body the route did
not read is drained, so that a refused request leaves the keep-alive connection usable.

JSON may spell a lone UTF-16 surrogate (``"\\ud800"``), which Python decodes into a string
that cannot be stored as UTF-8. Such code points are replaced by U+FFFD wherever they
occur (keys included), so that a trace carrying one is kept rather than lost, and a filter
value carrying one matches what was stored.
"""
from __future__ import annotations

import json
import math
import re
import zlib
from typing import Any

from .apierror import ApiError, bad_request

DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024
# A gzip body may expand a lot; past this many bytes it is refused instead of inflated.
MAX_DECODED_BYTES = 128 * 1024 * 1024
# A refused body up to this size is still read, so that the client sees the answer instead
# of a connection reset while it is still sending.
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _clean(text: str) -> str:
    return _SURROGATE.sub(REPLACEMENT, text)


def repair_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate replaced; walks without recursion."""
    if isinstance(value, str):
        return _clean(value)
    if not isinstance(value, (dict, list)):
        return value
    root = [value]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = _clean(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
        else:
            items = list(node.items())
            node.clear()
            for key, item in items:
                if isinstance(item, str):
                    item = _clean(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
                node[_clean(key)] = item
    return root[0]


def gunzip(data: bytes) -> bytes:
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


# One decoder for every body: json.loads with options builds a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def decode_json(data: bytes) -> Any:
    if not data.strip():
        raise bad_request("request body is empty; expected a JSON object")
    try:
        value = _DECODER.decode(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise bad_request("request body is not UTF-8 text; expected a JSON object") from None
    except ValueError as exc:
        raise bad_request(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise bad_request("request body nests too deeply; expected a JSON object of traces or spans") from None
    if _SURROGATE_ESCAPE.search(data):
        value = repair_surrogates(value)
    return value


class BodyReader:
    """Mixin for a ``BaseHTTPRequestHandler``: reads, drains and decodes request bodies."""

    rfile: Any
    headers: Any
    close_connection: bool
    _body_consumed: bool = True

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
            raise bad_request(f"Content-Length must be a non-negative integer, got {raw[:40]!r}")
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
            if size < 0:
                self.close_connection = True
                raise bad_request("malformed chunked request body")
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

    def read_raw_body(self, limit: int) -> bytes:
        self._body_consumed = True
        encoding = (self.headers.get("Transfer-Encoding") or "").strip().lower()
        if encoding == "chunked":
            return self._read_chunked(limit)
        if encoding:
            self.close_connection = True
            raise ApiError(
                501, f"Transfer-Encoding {encoding[:40]!r} is not supported; send Content-Length or chunked"
            )
        length = self._content_length()
        if length > limit:
            if length <= DRAIN_LIMIT_BYTES:
                self._skip(length)
            else:
                self.close_connection = True
            raise ApiError(
                413, f"request body of {length} bytes is larger than the limit of {limit} bytes; send smaller batches"
            )
        data = self.rfile.read(length) or b""  # None: the read timed out (the socket's kernel timeout)
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

    def finish_body(self) -> None:
        """Read and drop a body the route did not use, so the connection stays usable."""
        if self._body_consumed:
            return
        self._body_consumed = True
        try:
            if (self.headers.get("Transfer-Encoding") or "").strip().lower() == "chunked":
                self._read_chunked(DRAIN_LIMIT_BYTES)
                return
            length = self._content_length()
        except ApiError:
            self.close_connection = True
            return
        if length > DRAIN_LIMIT_BYTES:
            self.close_connection = True
        else:
            self._skip(length)

    def decoded_body(self, limit: int) -> bytes:
        """The body's bytes, inflated when sent with ``Content-Encoding: gzip``."""
        data = self.read_raw_body(limit)
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding == "gzip":
            return gunzip(data)
        if encoding not in ("", "identity"):
            raise ApiError(415, f"Content-Encoding {encoding[:40]!r} is not supported; use gzip or none")
        return data

    def json_body(self, limit: int) -> Any:
        return decode_json(self.decoded_body(limit))
