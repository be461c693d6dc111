"""Structured output: JSON on stdout, everything for people on stderr.

A command that also tells people what happened (a run's progress, summary and paths) leaves
its JSON document out in an interactive terminal, where it would bury those lines: it is
written with ``--json``, or whenever stdout is not a terminal (a pipe, a file, a CI log).
"""
from __future__ import annotations

import json
import sys
from typing import Any

# Control characters from a target (its stderr, its answers) are shown as their pictures:
# a terminal would obey them.
_PICTURES = {**{c: chr(0x2400 + c) for c in range(0x20) if c != 0x0A}, 0x7F: "\u2421",
             **{c: "\ufffd" for c in range(0x80, 0xA0)}}


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


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def visible(text: str) -> str:
    """``text`` with every control character but the newline shown as its picture (ESC as U+241B)."""
    return text.translate(_PICTURES)
