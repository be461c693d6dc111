"""The trace-shape parts of the vocabulary: span-name patterns and tool-error shapes.

A span-name value is an exact name (``policy.check``), a template where ``{name}`` is a
specialist or skill name and ``*`` any run of characters (``agent:{name}``), or a regular
expression prefixed ``re:`` matched against the whole name, with an optional named group
``name``; templates and patterns run on RE2 (base/patterns.py). An error shape is a JSON
pointer into a specialist's output and one test of the value there: ``equals``, ``matches``
(a regular expression) or ``present``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..base import jsonptr
from ..base.patterns import Pattern, compile_pattern

NAME_CHARS = r"[A-Za-z0-9_.:-]+"
"""What a ``{name}`` stands for: the characters a name in cases.yaml may have."""


@dataclass(frozen=True)
class SpanPattern:
    """Which span names a vocabulary entry means, and where a name is read from them."""

    text: str
    regex: Pattern | None = None  # None: the exact name ``text``

    @property
    def captures(self) -> bool:
        return self.regex is not None and "name" in self.regex.groupindex

    def match(self, span_name: str | None) -> tuple[bool, str | None]:
        """(whether ``span_name`` matches, the ``name`` it carries when the pattern captures one)."""
        if span_name is None:
            return False, None
        if self.regex is None:
            return span_name == self.text, None
        m = self.regex.fullmatch(span_name)
        if not m:
            return False, None
        return True, (m.group("name") if self.captures else None)

    def matches(self, span_name: str | None) -> bool:
        return self.match(span_name)[0]


def span_pattern(value: str) -> SpanPattern:
    """Parse a span-name value; ValueError says what is wrong with it."""
    if value.startswith("re:"):
        return SpanPattern(value, compile_pattern(value[3:]))  # PatternRefused is a ValueError
    if "{" not in value and "*" not in value:
        return SpanPattern(value)
    parts = re.split(r"(\{[^{}]*\}|\*)", value)
    out, names = [], 0
    for part in parts:
        if part == "*":
            out.append(".*?")
        elif part.startswith("{") and part.endswith("}"):
            if part != "{name}":
                raise ValueError(f"{value!r}: the only placeholder is {{name}}, got {part}")
            names += 1
            out.append(f"(?P<name>{NAME_CHARS})")
        elif "{" in part or "}" in part:
            raise ValueError(f"{value!r}: unbalanced brace; a template uses {{name}} and *")
        else:
            out.append(re.escape(part))
    if names > 1:
        raise ValueError(f"{value!r}: {{name}} may appear once")
    return SpanPattern(value, compile_pattern("".join(out)))


@dataclass(frozen=True)
class ErrorShape:
    """One declared way a specialist reports a failure."""

    pointer: str
    equals: Any = jsonptr.MISSING
    matches: Pattern | None = None
    present: bool | None = None
    message: str | None = None  # pointer to the error's text

    def describe(self) -> str:
        if self.matches is not None:
            return f"{self.pointer} matches {self.matches.pattern!r}"
        if self.present is not None:
            return f"{self.pointer} {'is present' if self.present else 'is absent'}"
        return f"{self.pointer} == {self.equals!r}"

    def test(self, output: Any) -> str | None:
        """The error's text when ``output`` has this shape, else None."""
        value = jsonptr.resolve(output, self.pointer)
        if self.present is not None:
            hit = (value is not jsonptr.MISSING and value is not None) == self.present
        elif self.matches is not None:
            hit = isinstance(value, (str, int, float)) and not isinstance(value, bool) and \
                self.matches.search(str(value)) is not None
        else:
            hit = value is not jsonptr.MISSING and same_json(value, self.equals)
        if not hit:
            return None
        text = jsonptr.resolve(output, self.message) if self.message else jsonptr.MISSING
        if text is jsonptr.MISSING or text is None:
            return self.describe()
        return text if isinstance(text, str) else str(text)


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


# Shapes that look like an error although the target did not declare them.
_SUSPECT_STATUS = {"error", "failed", "failure", "fail"}


def suspect_error(output: Any) -> str | None:
    """A short description when ``output`` looks like an undeclared error report, else None."""
    if not isinstance(output, dict):
        return None
    for key in ("ok", "success"):
        if output.get(key) is False:
            return f"{key}: false"
    status = output.get("status")
    if isinstance(status, str) and status.strip().lower() in _SUSPECT_STATUS:
        return f"status: {status}"
    for key in ("errors", "exception"):
        if output.get(key):
            return f"{key} is set"
    return None
