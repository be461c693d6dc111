"""The values inside a span's payloads, each with the JSON pointer that names it, and what kind of
value a drafted pointer may name: text is text, not a MIME type or an id."""
from __future__ import annotations

import re
from typing import Any, Iterator

from .yamltext import has_control

MAX_DEPTH = 6


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def leaves(value: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(pointer, value) of every scalar under ``value`` (strings, numbers, booleans, null)."""
    if isinstance(value, dict):
        if depth < MAX_DEPTH:
            for k, v in value.items():
                if not has_control(str(k)):  # a key target.yaml could not hold in a pointer
                    yield from leaves(v, f"{prefix}/{escape(str(k))}", depth + 1)
    elif isinstance(value, list):
        if depth < MAX_DEPTH:
            for i, v in enumerate(value):
                yield from leaves(v, f"{prefix}/{i}", depth + 1)
    else:
        yield prefix, value


def nodes(value: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(pointer, value) of every value under ``value``, objects and lists as well as scalars."""
    if prefix:
        yield prefix, value
    if depth >= MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not has_control(str(k)):
                yield from nodes(v, f"{prefix}/{escape(str(k))}", depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, f"{prefix}/{i}", depth + 1)


ID_LIKE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-|^[0-9a-f]{16,}$", re.I)
MIME = re.compile(r"^(?:application|text|image|audio|video|multipart|message|font|model)/[\w.+-]+(?:\s*;.*)?$", re.I)


def not_text(value: Any) -> str | None:
    """Why a string read as a tool's text is no text (a MIME type, an id), or None when it may be."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    if MIME.match(value.strip()):
        return f"a MIME type ({value.strip()!r})"
    if ID_LIKE.match(value.strip()):
        return "an id"
    return None


def reads_as_text(value: Any) -> bool:
    """A string a person wrote or reads: more than one word (a single token is a code, a status, a name)."""
    return isinstance(value, str) and not_text(value) is None and len(value.split()) > 1


def last_key(pointer: str) -> str:
    """The last key of a pointer, lower case; of an OpenTelemetry attribute key (``output.verdict``,
    ``gen_ai.tool.call.result``) its last dotted part."""
    return pointer.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower()


def common(pointer_sets: list[dict[str, Any]]) -> list[str]:
    """Pointers present in every one of the dicts, in the first one's order."""
    if not pointer_sets:
        return []
    return [p for p in pointer_sets[0] if all(p in s for s in pointer_sets[1:])]
