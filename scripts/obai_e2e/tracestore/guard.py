"""Who may talk to the store: the checks a request passes before it is routed.

Enters: the request's method, path and headers, and the server's port, token and data
directory. Leaves: nothing when the request may go on, or an :class:`ApiError` naming the
rule it broke (400 for a missing Host, 403 for a foreign Host or Origin, 401 for a missing
or wrong token, 415 for a body that is not JSON).

The rules keep a web page in the user's browser out. A page can send a "simple"
``text/plain`` POST to any address without asking, and a DNS name that later resolves to
127.0.0.1 makes the browser treat the store as that name's origin. So a write must be
``application/json`` (which a page can only send after a CORS preflight the store never
grants), the ``Host`` must be a loopback name with the store's own port, a request with an
``Origin`` is refused unless that origin is the store itself, and every ``/api`` route but
the health ping wants the token the server chose at start (the opik SDK sends
``OPIK_API_KEY`` verbatim as the ``Authorization`` header).
"""
from __future__ import annotations

import hmac
from email.message import Message

from .apierror import ApiError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
OPEN_PATHS = frozenset({"/api/is-alive/ping"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
JSON_TYPE = "application/json"


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` as (lower-case name, port or None); None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1:]
    else:
        name, sep, port_text = value.partition(":")
        rest = sep + port_text
    if not rest:
        return name, None
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return None
    return name, int(rest[1:])


def check_host(headers: Message, port: int) -> None:
    values = headers.get_all("Host") or []
    if len(values) != 1:
        raise ApiError(400, "the request needs exactly one Host header")
    parsed = _split_host(values[0])
    name, given = parsed if parsed is not None else ("", None)
    if name not in LOOPBACK_NAMES or (given if given is not None else 80) != port:
        shown = values[0][:200]
        raise ApiError(
            403,
            f"Host {shown!r} is not this trace store; it answers only to 127.0.0.1:{port}, "
            f"localhost:{port} or [::1]:{port}",
        )


def own_origins(port: int) -> frozenset[str]:
    return frozenset(f"http://{name}:{port}" for name in LOOPBACK_NAMES)


def check_origin(headers: Message, port: int) -> None:
    values = headers.get_all("Origin") or []
    for value in values:
        if value.strip().lower() not in own_origins(port):
            raise ApiError(
                403,
                f"requests from web pages are refused (Origin {value[:200]!r}); the trace store serves "
                f"local programs and its own pages only",
            )


def needs_token(path: str) -> bool:
    return (path == "/api" or path.startswith("/api/")) and path not in OPEN_PATHS


def check_token(headers: Message, token: str, data_dir: str) -> None:
    given = (headers.get("Authorization") or "").strip()
    if given[:7].lower() == "bearer ":
        given = given[7:].strip()
    where = f"{data_dir}/store.json" if data_dir else "the store's store.json"
    if not given:
        raise ApiError(
            401,
            f"this trace store wants its access token in the Authorization header: the 'token' in {where} "
            f"(for the opik SDK set OPIK_API_KEY to it; `obai-e2e traces start` prints the variables to use)",
        )
    if not hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8")):
        raise ApiError(
            401,
            f"the Authorization header does not hold this trace store's token; the token changes at every "
            f"start of the store: read the current one from {where}",
        )


def check_content_type(method: str, headers: Message) -> None:
    if method not in BODY_METHODS:
        return
    raw = headers.get("Content-Type") or ""
    media = raw.split(";", 1)[0].strip().lower()
    if media != JSON_TYPE:
        shown = repr(raw[:100]) if raw else "none"
        raise ApiError(
            415,
            f"Content-Type {shown} is not accepted for {method}; send {JSON_TYPE} "
            f"(optionally with Content-Encoding: gzip)",
        )


def admit(method: str, path: str, headers: Message, *, port: int, token: str, data_dir: str) -> None:
    """Every check that does not depend on the route, in the order a refusal is reported."""
    check_host(headers, port)
    check_origin(headers, port)
    if needs_token(path):
        check_token(headers, token, data_dir)
