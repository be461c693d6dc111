"""The values inside a span's payloads, each with the JSON pointer that names it."""
from __future__ import annotations

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


def last_key(pointer: str) -> str:
    """The last key of a pointer, lower case; of an OpenTelemetry attribute key (``output.verdict``,
    ``gen_ai.tool.call.result``) its last dotted part."""
    return pointer.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower()


def common(pointer_sets: list[dict[str, Any]]) -> list[str]:
    """Pointers present in every one of the dicts, in the first one's order."""
    if not pointer_sets:
        return []
    return [p for p in pointer_sets[0] if all(p in s for s in pointer_sets[1:])]
