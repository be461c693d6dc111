"""JSON pointers into a span or a trace: the one path syntax of target.yaml.

Every field that points into a span (the guardrail's decision, a skill's name, a
specialist's text, data, error shape or option figures, the hub-to-strategy input) is a
JSON pointer that starts at the span exactly as ``traces sample --json`` prints it:
``/output/decision``, ``/metadata/toolkit``. ``final_response_field`` starts at the trace
the same way. A dotted path from older files (``output.decision``) is refused with the
pointer to write instead: a dotted path cannot tell ``a.b`` the key from ``a`` → ``b``,
so converting it would be a guess.
"""
from __future__ import annotations

import re

from ..base import jsonptr

SPAN_FIELDS = ("id", "name", "type", "parent_span_id", "start_time", "end_time", "input", "output", "metadata",
               "error_info")
"""The fields of a span as ``traces sample --json`` prints them (trace/raw.py), where a span pointer starts."""
TRACE_FIELDS = ("id", "name", "start_time", "end_time", "thread_id", "tags", "input", "output", "metadata",
                "error_info")
"""The fields of a trace as ``traces sample --json`` prints them, where a trace pointer starts."""

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$")


def from_dotted(dotted: str) -> str:
    """The JSON pointer an old dotted path meant (``output.final.text`` → ``/output/final/text``)."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in dotted.split("."))


class PointerError(ValueError):
    """A value that is no pointer into a span or trace; ``write`` is the pointer it meant, when that is known."""

    def __init__(self, message: str, write: str | None = None):
        super().__init__(message)
        self.write = write


def check(value: str, fields: tuple[str, ...], what: str) -> str:
    """``value`` when it is a JSON pointer into a ``what`` (span or trace); PointerError says what to write."""
    if not value.startswith("/") and value and _DOTTED.match(value):
        hint = from_dotted(value)
        if hint.split("/")[1] not in fields:
            hint = "/output" + hint
        raise PointerError(f"{value!r} is a dotted path; this field takes a JSON pointer into the {what} as "
                           f"`traces sample --json` prints it: write {hint!r}", hint)
    tokens = jsonptr.parse(value)
    if not tokens or tokens[0] not in fields:
        hint = "/output" + value if value.startswith("/") else None
        raise PointerError(f"{value!r} does not start at a field of the {what}: a pointer starts at the {what} as "
                           f"`traces sample --json` prints it ({', '.join(fields)})"
                           + (f": write {hint!r} if it points into the output" if hint else ""), hint)
    return value


def under(pointer: str, field: str) -> str | None:
    """The rest of ``pointer`` below the span field ``field`` (``/output/figures`` → ``/figures``), else None."""
    tokens = jsonptr.parse(pointer)
    if not tokens or tokens[0] != field:
        return None
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens[1:])
