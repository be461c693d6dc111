"""The final answer of a turn, where ``target.answer_from`` says it is.

``stdout``: the CLI's stdout, stripped. ``trace_output:<pointer>``: the value at the
pointer in the trace's output (read when the trace is curated). ``stdout_json:<pointer>``:
stdout is one JSON document, or JSON Lines (one document per line, as agent CLIs print
progress and then a result): the value at the pointer in the whole document, else in the
last line that has it.
"""
from __future__ import annotations

import json

from ..base import jsonptr
from ..trace.values import dumps


def from_stdout_json(stdout: str, pointer: str) -> str:
    """The value at ``pointer`` in the JSON on stdout, as text; "" when no document has it."""
    text = (stdout or "").strip()
    if not text:
        return ""
    try:
        return _text(jsonptr.resolve(json.loads(text), pointer))
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        try:
            value = jsonptr.resolve(json.loads(line), pointer)
        except ValueError:
            continue
        if value is not jsonptr.MISSING:
            return _text(value)
    return ""


def _text(value) -> str:
    return "" if value is jsonptr.MISSING or value is None else dumps(value).strip()
