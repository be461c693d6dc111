"""Where two answers differ, word by word: the baseline's answer and this run's, marked for the report.

Enters: two texts. Leaves: each side as a list of ``[text, changed]`` pieces, so the page can
mark what the baseline had and this run lost (its side) and what this run has new (its side).
Words are compared with whitespace kept, so numbers and line breaks stay where they were.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher

_TOKENS = re.compile(r"\s+|[^\s]+")


def _merge(pieces: list[list]) -> list[list]:
    out: list[list] = []
    for text, changed in pieces:
        if out and out[-1][1] == changed:
            out[-1][0] += text
        else:
            out.append([text, changed])
    return out


def word_diff(before: str, after: str) -> tuple[list[list], list[list]]:
    """(the baseline's pieces, this run's pieces); a piece is ``[text, changed]``."""
    a, b = _TOKENS.findall(before or ""), _TOKENS.findall(after or "")
    old, new = [], []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old.append(["".join(a[i1:i2]), op != "equal"])
        new.append(["".join(b[j1:j2]), op != "equal"])
    return _merge([p for p in old if p[0]]), _merge([p for p in new if p[0]])
