"""Threshold tokens of a strategy query, and whether they survive verbatim.

A token is an indicator with its period (``RSI(14)``), a clock time (``9:45``), a
percentage (``1.5%``) or a plain number (``30``). "Verbatim" means the same characters
as a whole token: ``30`` is not found in ``30.0`` or ``130``, ``9:45`` not in ``09:45``.
Operator wording around them may change freely.
"""
from __future__ import annotations

import re

_INDICATOR = re.compile(r"\b[A-Za-z]{2,12}\(\s*\d+(?:\.\d+)?(?:\s*,\s*\d+(?:\.\d+)?)*\s*\)")
_TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?![\d:])")
_PERCENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?%")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w%:]|\.\d)")


def tokens(query: str) -> list[str]:
    """Threshold tokens in order of appearance, each once."""
    spans: list[tuple[int, int, str]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e, _ in spans)

    for rx in (_INDICATOR, _TIME, _PERCENT, _NUMBER):
        for m in rx.finditer(query):
            if free(*m.span()):
                spans.append((m.start(), m.end(), m.group(0)))
    seen, out = set(), []
    for _, _, tok in sorted(spans):
        if tok not in seen:
            seen.add(tok)
            out.append(tok)
    return out


def present(token: str, text: str) -> bool:
    """``token`` occurs in ``text`` as a whole token, character for character."""
    if not text:
        return False
    before = r"(?<![\w.:])" if token[0].isdigit() else r"(?<![\w])"
    after = r"(?![\d]|\.\d|:\d)" if token[-1].isdigit() else ""
    return re.search(before + re.escape(token) + after, text) is not None


def missing(query: str, text: str) -> list[str]:
    return [t for t in tokens(query) if not present(t, text)]
