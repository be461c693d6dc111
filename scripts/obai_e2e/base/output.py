"""Structured output: JSON on stdout, everything for people on stderr.

A command that also tells people what happened (a run's progress, summary and paths) leaves
its JSON document out in an interactive terminal, where it would bury those lines: it is
written with ``--json``, or whenever stdout is not a terminal (a pipe, a file, a CI log).
"""
from __future__ import annotations

import json
import sys
import unicodedata
from typing import Any


def emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def wants_json(asked: bool = False) -> bool:
    """True when the JSON document goes to stdout: asked for, or stdout is not a terminal."""
    return asked or not sys.stdout.isatty()


def result(data: Any, asked: bool = False) -> None:
    """The JSON document of a command that also speaks to people (see the module docstring)."""
    if wants_json(asked):
        emit(data)


def compact(data: dict) -> str:
    """One JSON object, one top-level key per line and each item of a list on its own line.

    Read by a model as often as by a person: no indentation to pay for, yet every unit of
    a list of short lines stands on a line of its own.
    """
    def one(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))

    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            body = ",\n ".join(one(v) for v in value)
            parts.append(f"{one(key)}: [\n {body}]")
        else:
            parts.append(f"{one(key)}: {one(value)}")
    return "{" + ",\n".join(parts) + "}\n"


def emit_compact(data: dict) -> None:
    sys.stdout.write(compact(data))
    sys.stdout.flush()


def emit_flat(data: dict) -> None:
    """One JSON object with one top-level key per line and each value on that line (a list of unit ids
    reads as one line, not one line per id)."""
    sys.stdout.write("{" + ",\n".join(f"{json.dumps(k, ensure_ascii=False)}: "
                                      f"{json.dumps(v, ensure_ascii=False, separators=(', ', ': '))}"
                                      for k, v in data.items()) + "}\n")
    sys.stdout.flush()


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def visible(text: str, limit: int | None = None) -> str:
    """``text`` on one line with every control and format character written as an escape
    (``\\x1b``, ``\\x00``, ``\\u202e``), so a terminal shows it instead of obeying it; with
    ``limit``, only its last ``limit`` characters (a cut is marked with ``…``)."""
    out = "".join(ch if ch == " " or unicodedata.category(ch) not in _HIDDEN else
                  (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}") for ch in text or "")
    if limit is not None and len(out) > limit:
        out = "…" + out[-limit:]
    return out


_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Cs")
