"""Numbers in a text, compared the way the harness compares them (1,234.5 = 1234.5, 63% = 63)."""
from __future__ import annotations

import re
from decimal import Decimal

NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def numbers(text: str) -> list[str]:
    """Every number token of ``text`` as written."""
    return NUMBER.findall(text)


def values(text: str) -> set[Decimal]:
    """The numeric values of ``text``'s number tokens."""
    return {Decimal(token.replace(",", "")) for token in numbers(text)}


def ungrounded(answer: str, payloads: list[str]) -> list[str]:
    """Number tokens of ``answer`` whose value appears in none of ``payloads``."""
    known: set[Decimal] = set()
    for payload in payloads:
        known |= values(payload)
    return [t for t in numbers(answer) if Decimal(t.replace(",", "")) not in known]
