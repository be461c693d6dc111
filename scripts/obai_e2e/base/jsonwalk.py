"""Walking a JSON-like value without recursion: a copy with its strings changed, bounded in depth.

Enters: a value as JSON parsers, the SDK or a trace store return it (dicts, lists, tuples, scalars),
nested as deep as its writer liked. Leaves: a copy in which every string went through a function,
every key through another, tuples became lists, and every container nested deeper than a limit was
replaced by a line saying so (:func:`deeper`). A walk uses a stack of its own, so a value nested
10,000 levels deep costs time, not Python's recursion limit, and what comes out can be written as
JSON, printed or walked recursively again.
"""
from __future__ import annotations

from typing import Any, Callable

MAX_DEPTH = 64
"""Levels of nesting the harness keeps of a value it read from a trace (the outermost object is level 1)."""


def deeper(max_depth: int = MAX_DEPTH) -> str:
    """What stands in place of a container nested deeper than ``max_depth`` levels."""
    return f"… nested deeper than {max_depth} levels: not shown"


def _same(value: Any) -> Any:
    return value


def _empty(value: dict | list | tuple) -> dict | list:
    return {} if isinstance(value, dict) else []


def rebuild(value: Any, text: Callable[[str], Any] = _same, *, key: Callable[[Any], Any] = _same,
            keep: Callable[[Any], bool] | None = None, max_depth: int | None = MAX_DEPTH) -> Any:
    """A copy of ``value``: each string through ``text``, each key through ``key``; the value under a key that
    ``keep`` accepts is kept as it is; a non-empty container deeper than ``max_depth`` levels (None: no limit)
    is replaced by :func:`deeper`. Order of keys and items is kept."""
    if not isinstance(value, (dict, list, tuple)):
        return text(value) if isinstance(value, str) else value
    root = _empty(value)
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        source, target, depth = stack.pop()
        is_dict = isinstance(source, dict)
        for k, v in (source.items() if is_dict else enumerate(source)):
            if is_dict and keep is not None and keep(k):
                target[k] = v
                continue
            if isinstance(v, (dict, list, tuple)):
                if v and max_depth is not None and depth >= max_depth:
                    out: Any = deeper(max_depth)
                else:
                    out = _empty(v)
                    stack.append((v, out, depth + 1))
            elif isinstance(v, str):
                out = text(v)
            else:
                out = v
            if is_dict:
                target[key(k)] = out
            else:
                target.append(out)
    return root


def nests_deeper(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether a non-empty container of ``value`` lies deeper than ``max_depth`` levels."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if not isinstance(v, (dict, list, tuple)) or not v:
            continue
        if depth > max_depth:
            return True
        stack.extend((item, depth + 1) for item in (v.values() if isinstance(v, dict) else v))
    return False


def bounded(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` itself when it nests at most ``max_depth`` levels, else a copy cut there (:func:`rebuild`)."""
    return rebuild(value, max_depth=max_depth) if nests_deeper(value, max_depth) else value
