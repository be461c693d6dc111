"""JSON pointers (RFC 6901): ``/final/text`` names a value inside a JSON document."""
from __future__ import annotations

from typing import Any


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""What :func:`resolve` returns when the pointer names nothing."""


def parse(pointer: str) -> tuple[str, ...]:
    """The reference tokens of ``pointer``; ValueError when it is not a JSON pointer."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer: it must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise ValueError(f"{pointer!r} is not a JSON pointer: '~' must be written ~0 (and '/' as ~1)")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in tokens)


def resolve(doc: Any, pointer: str | tuple[str, ...]) -> Any:
    """The value ``pointer`` names in ``doc``, or :data:`MISSING`."""
    tokens = parse(pointer) if isinstance(pointer, str) else pointer
    cur = doc
    for token in tokens:
        if isinstance(cur, dict):
            if token not in cur:
                return MISSING
            cur = cur[token]
        elif isinstance(cur, list):
            if not token.isdigit() or (len(token) > 1 and token[0] == "0") or int(token) >= len(cur):
                return MISSING
            cur = cur[int(token)]
        else:
            return MISSING
    return cur
