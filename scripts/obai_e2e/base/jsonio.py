"""Reading JSON that a person or another program handed in: strict numbers, clear errors.

Python's ``json`` accepts ``NaN``, ``Infinity`` and floats that overflow to infinity,
none of which is JSON; a number like that in a timeout or a weight hangs or poisons
every sum. ``loads`` refuses them, naming the source and the JSON pointer of the value.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .errors import ConfigError, ObaiError


class _NonFinite(Exception):
    pass


class _Marker:
    def __init__(self, text: str) -> None:
        self.text = text


def _constant(text: str) -> float:
    raise _NonFinite(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _pointer(path: list) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path) if path else "/"


def _find_marker(data: Any) -> tuple[str, str]:
    stack: list[tuple[list, Any]] = [([], data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Marker):
            return _pointer(path), value.text
        if isinstance(value, dict):
            stack.extend((path + [k], v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + [i], v) for i, v in reversed(list(enumerate(value))))
    return "/", "?"


def loads(text: str | bytes, *, source: str, error: type[ObaiError] = ConfigError) -> Any:
    """Parse ``text`` from ``source``; raise ``error`` naming the source and the place of a problem."""
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_float)
    except _NonFinite:
        marked = json.loads(text, parse_constant=_Marker,
                            parse_float=lambda t: _Marker(t) if not math.isfinite(float(t)) else float(t))
        where, token = _find_marker(marked)
        raise error(f"{source}: field {where}: {token[:40]} is not a finite number; JSON numbers must be "
                    "finite (write a number, or null where the field allows it)") from None
    except json.JSONDecodeError as exc:
        raise error(f"{source}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise error(f"{source}: not valid JSON here: nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError:  # an integer with more digits than Python converts
        raise error(f"{source}: not valid JSON here: a number has thousands of digits") from None


def load(path: Path, *, label: str | None = None, error: type[ObaiError] = ConfigError) -> Any:
    """``loads`` of a file; a missing or unreadable file is an ``error`` too."""
    source = label or str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise error(f"{source}: file not found") from None
    except OSError as exc:
        raise error(f"{source}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return loads(text, source=source, error=error)
