"""Numbers in text, normalised so that the same value written two ways compares equal.

``1,234.5`` and ``1234.50`` are one value; ``12.5%`` also matches a payload that holds
``0.125``; ``$54.3M`` matches ``54,300,000``; the sign is ignored (a drawdown is
``-8.3%`` in one place and ``8.3%`` in another). Dates and clock times are kept as
whole tokens and must appear verbatim.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = re.compile(
    r"(?<![\w.])"                      # not glued to a word or a previous number
    r"[-−+]?\$?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<pct>\s?%)?"
    r"(?P<suffix>\s?(?:k|K|M|mn|bn|B|billion|million|thousand)\b)?"
)
_LIST_MARKER = re.compile(r"^\s*(?P<n>\d{1,2})[.)]\s", re.M)
_COMPOUND = re.compile(r"\d+-[A-Za-z]")
_SCALE = {"k": 10**3, "K": 10**3, "thousand": 10**3, "M": 10**6, "mn": 10**6, "million": 10**6,
          "bn": 10**9, "B": 10**9, "billion": 10**9}


@dataclass(frozen=True)
class Number:
    """One number as written, and the values it may stand for."""

    text: str
    values: frozenset
    token: str | None = None  # dates and times: compared verbatim


def _decimal(raw: str) -> Decimal | None:
    try:
        return Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None


def _norm(value: Decimal) -> Decimal:
    value = abs(value)
    return value.normalize() if value != 0 else Decimal(0)


class _Spans:
    """A union of half-open spans; membership in O(log n), so a huge answer stays linear."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def has(self, pos: int) -> bool:
        i = bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]


def extract(text: str, *, skip_list_markers: bool = True) -> list[Number]:
    """Every number, date and time in ``text``, in order of appearance."""
    if not text:
        return []
    found: list[tuple[int, Number]] = []
    taken: list[tuple[int, int]] = []
    for rx in (_DATE, _TIME):
        for m in rx.finditer(text):
            found.append((m.start(), Number(m.group(0), frozenset(), token=m.group(0))))
            taken.append(m.span())
    for m in _HEX.finditer(text):
        taken.append(m.span())
    markers = {m.start("n") for m in _LIST_MARKER.finditer(text)} if skip_list_markers else set()
    # "52-week", "50-day": a number that is part of a word is a descriptor, not a figure.
    for m in _COMPOUND.finditer(text):
        taken.append((m.start(), m.end() - 2))
    covered = _Spans(taken)
    for m in _NUMBER.finditer(text):
        start, end = m.span("num")
        if covered.has(start):
            continue
        if start in markers and not m.group("pct"):
            continue
        value = _decimal(m.group("num"))
        if value is None:
            continue
        values = {_norm(value)}
        if m.group("pct"):
            values.add(_norm(value / 100))
        suffix = (m.group("suffix") or "").strip()
        if suffix in _SCALE:
            values.add(_norm(value * _SCALE[suffix]))
        found.append((m.start(), Number(m.group(0).strip(), frozenset(values))))
    found.sort(key=lambda pair: pair[0])
    return [n for _, n in found]


def payload_texts(payload: str) -> list[str]:
    """The texts a stored payload holds, decoded: every string (and key) of its JSON, numbers as written.

    Numbers are read from these, not from the JSON text, where a line break is the two
    characters ``\\n`` and would glue the ``n`` to a number at the start of a line.
    A payload that is not JSON is one text.
    """
    try:
        value = json.loads(payload, parse_float=str, parse_int=str)
    except (TypeError, ValueError, RecursionError):
        return [payload or ""]
    out: list[str] = []
    stack = [value]
    while stack:  # depth first, in document order, with a stack of its own (any depth)
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, item in reversed(list(v.items())):
                stack.extend((item, k))  # the key pops first, then its value
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


class Pool:
    """All values and verbatim tokens that a set of texts contains."""

    def __init__(self, texts):
        self.values: set = set()
        self.tokens: set = set()
        for text in texts:
            for n in extract(text or "", skip_list_markers=False):
                if n.token:
                    self.tokens.add(n.token)
                else:
                    self.values |= n.values

    def contains(self, number: Number) -> bool:
        if number.token:
            return number.token in self.tokens
        return bool(number.values & self.values)
