"""Who may talk to the store: the checks a request passes before it is routed.

Enters: the request's method, path and headers, and the server's port, keys and data
directory. Leaves: the request's principal when it may go on, or an :class:`ApiError` naming the
rule it broke (400 for a missing Host, 403 for a foreign Host or Origin, 401 for a missing
or wrong token, 415 for a body that is not JSON).

The rules keep a web page in the user's browser out. A page can send a "simple"
``text/plain`` POST to any address without asking, and a DNS name that later resolves to
127.0.0.1 makes the browser treat the store as that name's origin. So a write must be
``application/json`` (or, on the OTLP route, ``application/x-protobuf``; a page can send
either only after a CORS preflight the store never grants), the ``Host`` must be a loopback name with the store's own port, a request with an
``Origin`` is refused unless that origin is the store itself, and every ``/api`` route but
the health ping wants the token the server chose at start, or a turn key minted with it (the
opik SDK sends ``OPIK_API_KEY`` verbatim as the ``Authorization`` header): the key names the
request's :class:`Principal`, whose rights :mod:`access` and :mod:`ownership` apply.

The pages outside ``/api`` want the *page key*, derived from the token: a browser following
a link cannot send a header, so the key comes in the page's address (``?key=``) and every
link of a page carries it on. No cookie is set: a browser sends a host's cookies to every
port of that host, so a cookie would hand the key to any other service on 127.0.0.1 the
browser visits. The key opens the read-only pages only; it cannot be turned back into the
token, so an address kept in a browser's history never grants writes.
"""
from __future__ import annotations

import hashlib
import hmac
from email.message import Message
from urllib.parse import parse_qs

from .apierror import ApiError
from .turnkeys import KeyCheck, Principal

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_GOOD_HOSTS: dict[int, set[str]] = {}
OPEN_PATHS = frozenset({"/api/is-alive/ping"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
JSON_TYPE = "application/json"
JSON_ONLY = frozenset({JSON_TYPE})


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
    if len(values) == 1 and values[0] in _GOOD_HOSTS.get(port, ()):
        return
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
    good = _GOOD_HOSTS.setdefault(port, set())
    if len(good) < 16:  # every client of a store sends one of a few spellings: each is parsed once
        good.add(values[0])


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


def check_token(headers: Message, keys: KeyCheck, data_dir: str) -> Principal:
    """Who the request's key names: the harness (the token) or one turn (a turn key); 401 otherwise."""
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
    principal = keys.principal(given)
    if principal is None:
        raise ApiError(
            401,
            f"the Authorization header holds neither this trace store's token nor a turn key it issued; the token "
            f"changes at every start of the store, and with it every turn key: read the current one from {where}",
        )
    return principal


def page_key(token: str) -> str:
    """The key of the read-only pages: a one-way function of the API token."""
    return hmac.new(token.encode("utf-8"), b"obai-trace-store pages", hashlib.sha256).hexdigest()[:32]


def page_access(query: str, *, token: str, data_dir: str) -> str:
    """The page key to carry in the page's links, when the address holds it.

    Raises 401 naming where the key is printed when the address does not hold it.
    """
    wanted = page_key(token).encode("ascii")
    try:
        given = parse_qs(query, max_num_fields=10).get("key", [""])[0]
    except ValueError:
        given = ""
    if given and hmac.compare_digest(given.encode("utf-8", "replace"), wanted):
        return given
    where = f"{data_dir}/store.json" if data_dir else "the store's store.json"
    raise ApiError(
        401,
        "these pages need this trace store's page key in their address: open the page_url that "
        "`obai-e2e traces start` prints (or `obai-e2e traces status --show-token`) and follow its links; "
        f"the key changes at every start of the store (token in {where})",
    )


def media_type(headers: Message) -> str:
    return (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()


def check_content_type(method: str, headers: Message, accepted: frozenset[str] = JSON_ONLY) -> None:
    """415 unless a write's media type is one the route reads; none of them is one a page may send unasked."""
    if method not in BODY_METHODS:
        return
    if media_type(headers) not in accepted:
        raw = headers.get("Content-Type") or ""
        shown = repr(raw[:100]) if raw else "none"
        raise ApiError(
            415,
            f"Content-Type {shown} is not accepted for {method}; send {' or '.join(sorted(accepted))} "
            f"(optionally with Content-Encoding: gzip)",
        )


def admit(method: str, path: str, headers: Message, *, port: int, keys: KeyCheck, data_dir: str) -> Principal | None:
    """Every check that does not depend on the route, in the order a refusal is reported; the request's
    principal (None on a route that wants no key)."""
    check_host(headers, port)
    check_origin(headers, port)
    if needs_token(path):
        return check_token(headers, keys, data_dir)
    return None
