"""Structured output: JSON on stdout, everything for people on stderr."""
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


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def visible(text: str) -> str:
    """``text`` with every control character but the newline shown as its picture (ESC as U+241B)."""
    return text.translate(_PICTURES)
