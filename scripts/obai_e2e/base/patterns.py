"""Regular expressions from a user's files, run on RE2: in time linear in the text, whatever the pattern.

Enters: a pattern written in Python's syntax (a vocabulary ``re:`` name, a rubric or job pattern, a ui
pattern) and where it was written. Leaves: a :class:`Pattern` with the ``search``, ``match``,
``fullmatch``, ``finditer`` and ``sub`` the harness calls, or :class:`PatternRefused` naming the place and
the construct RE2 cannot run (a backreference, look-around, an atomic group, a possessive quantifier…).

Python's syntax is kept, and so is its meaning where RE2's differs (re2_syntax.py rewrites the pattern).
A pattern sees at most :data:`MAX_TEXT_CHARS` characters of a text (the first ones; a longer text never
``fullmatch``-es), the bound the harness reads an answer from stdout with. The harness's own regular
expressions, constants in its code, stay on Python's ``re``.
"""
from __future__ import annotations

import re
import warnings
from functools import lru_cache
from typing import Any, Callable, Iterator

import re2

from .re2_syntax import Unsupported, translate

MAX_TEXT_CHARS = 1_000_000
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported once, by the caller, not logged by RE2 too
_SURROGATE = re.compile("[\ud800-\udfff]")


class PatternRefused(ValueError):
    """A pattern that is not a regular expression, or uses what RE2 cannot run; the message says which."""


class Pattern:
    """A compiled user pattern: ``pattern`` as written, matched on RE2."""

    __slots__ = ("pattern", "_rx")

    def __init__(self, pattern: str, rx: Any):
        self.pattern, self._rx = pattern, rx

    @property
    def groups(self) -> int:
        return self._rx.groups

    @property
    def groupindex(self) -> dict[str, int]:
        return self._rx.groupindex

    def _run(self, call: Callable[[str], Any], text: str) -> Any:
        try:
            return call(text)
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: matched as U+FFFD, at the same place
            return call(_SURROGATE.sub("\ufffd", text))

    def search(self, text: str) -> Any:
        return self._run(self._rx.search, text[:MAX_TEXT_CHARS])

    def match(self, text: str) -> Any:
        return self._run(self._rx.match, text[:MAX_TEXT_CHARS])

    def fullmatch(self, text: str) -> Any:
        return None if len(text) > MAX_TEXT_CHARS else self._run(self._rx.fullmatch, text)

    def finditer(self, text: str) -> Iterator[Any]:
        return iter(self._run(lambda t: list(self._rx.finditer(t)), text[:MAX_TEXT_CHARS]))

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        """``text`` with matches in its first :data:`MAX_TEXT_CHARS` characters replaced; the rest as it was."""
        return self._run(lambda t: self._rx.sub(repl, t, count), text[:MAX_TEXT_CHARS]) + text[MAX_TEXT_CHARS:]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"

    def __reduce__(self):
        return (compile_pattern, (self.pattern,))


def compile_pattern(pattern: str, where: str | None = None) -> Pattern:
    """``pattern`` (Python's syntax) compiled on RE2; :class:`PatternRefused` says why it cannot be, after
    ``where`` (e.g. ``target.yaml:12: field /rubric/leak_patterns/0``) when given."""
    try:
        return _compiled(pattern)
    except PatternRefused as exc:
        if where:
            raise PatternRefused(f"{where}: {exc}") from None
        raise


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Pattern:
    if not isinstance(pattern, str):
        raise PatternRefused(f"{pattern!r} is not text; expected a regular expression")
    try:
        rewritten = translate(pattern)
    except Unsupported as exc:
        raise PatternRefused(f"{pattern!r} uses {exc}, which RE2 cannot run; patterns run in linear time "
                             f"(references/adopting.md, \"Patterns\")") from None
    try:
        return Pattern(pattern, re2.compile(rewritten, _OPTIONS))
    except re2.error as exc:
        raise PatternRefused(_why(pattern, exc)) from None


def _why(pattern: str, exc: Exception) -> str:
    said = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(pattern)
        except re.error as py:
            return f"{pattern!r} is not a valid regular expression ({py})"
        except (RecursionError, OverflowError, ValueError) as py:
            return f"{pattern!r} is not a valid regular expression ({type(py).__name__})"
    if "repetition size" in said:
        return f"{pattern!r}: RE2 repeats at most 1,000 times ({said}); write a smaller count"
    if "too large" in said or "too big" in said:
        return f"{pattern!r} is too large for RE2's memory budget ({said}); write a smaller pattern"
    return f"{pattern!r} cannot run on RE2 ({said}); patterns run in linear time (references/adopting.md, \"Patterns\")"


NEVER = compile_pattern(r"[^\x00-\x{10FFFF}]")
"""A pattern that matches nothing: what a refused pattern reads as while the rest of its file is checked."""
