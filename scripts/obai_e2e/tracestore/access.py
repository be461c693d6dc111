"""The routes a turn's key may not use at all: every delete, and the store's own routes.

Enters: the request's principal, method and path, and the store (to name the project a
refused delete aimed at). Leaves: nothing when the route is open to the principal, or a 403
(:func:`apierror.forbidden`) that names the request and why, kept in the refusal record.

What a turn's key may change on the routes it may use is decided where the rows are
(:mod:`ownership`); which rows it may read, by the reads themselves (``owner``).
"""
from __future__ import annotations

import re

from .apierror import ApiError, forbidden
from .db import Store
from .payloads import SPAN, TRACE
from .turnkeys import Principal

OWN_ROUTES = "/api/obai-trace-store/"
_PROJECT = re.compile(r"/api/v1/private/projects/([0-9A-Fa-f-]{36})")
_ENTITY = re.compile(r"/api/v1/private/(traces|spans)/([0-9A-Fa-f-]{36})(?:/.*)?")


def is_delete(method: str, path: str) -> bool:
    return method == "DELETE" or path.endswith("/delete")


def check(principal: Principal | None, method: str, path: str, store: Store) -> None:
    """Refuse a turn's key a delete of any kind and the store's own routes (refusals, info)."""
    if principal is None or not principal.is_turn:
        return
    if path.startswith(OWN_ROUTES):
        raise forbidden(f"refused: {method} {path[:200]}: the trace store's own routes want its token, not a "
                        f"turn's key ({principal.name})", project=None)
    if is_delete(method, path):
        raise forbidden(f"refused: {method} {path[:200]}: a turn's key may not delete anything; it may create "
                        f"entities and update those it created ({principal.name})", project=_project_of(path, store))


def _project_of(path: str, store: Store) -> str | None:
    """The name of the project a delete aimed at, when the store holds it (for the refusal record)."""
    try:
        found = _PROJECT.fullmatch(path)
        if found:
            return store.project(project_id=found.group(1).lower()).get("name")
        found = _ENTITY.fullmatch(path)
        if found:
            kind = TRACE if found.group(1) == "traces" else SPAN
            return store.project_name_of(kind, found.group(2).lower())
    except ApiError:
        return None
    return None
