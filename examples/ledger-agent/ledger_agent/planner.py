"""Which desks a question needs, in the order the question asks for them.

Each desk is triggered by words or phrases (matched case-insensitively as whole words);
desks run in the order of their first trigger in the question, each at most once.
"""
from __future__ import annotations

import re

DESK_TRIGGERS: dict[str, tuple[str, ...]] = {
    "quotes": ("close", "closed", "closing", "price", "prices", "quote", "quotes", "trading", "traded",
               "52-week", "volume"),
    "financials": ("margin", "margins", "revenue", "earnings", "eps", "p/e", "net income", "valuation",
                   "financials"),
    "derivs": ("option", "options", "call", "put", "straddle", "iron condor", "strike", "payoff",
               "break-even", "breakeven"),
}
TOOLKITS = {"quotes": "equities", "financials": "filings", "derivs": "derivatives"}
FINANCE_WORDS = ("stock", "stocks", "share", "shares", "invest", "investing", "market", "markets", "fund",
                 "funds", "etf", "portfolio", "dividend", "bond", "bonds", "finance", "financial")


def _first(text: str, words: tuple[str, ...]) -> int | None:
    at = [m.start() for w in words
          for m in re.finditer(rf"(?<![A-Za-z0-9]){re.escape(w)}(?![A-Za-z0-9])", text, flags=re.IGNORECASE)]
    return min(at) if at else None


def desks(question: str) -> list[str]:
    """The desks ``question`` needs, in order of first mention."""
    found = [(at, desk) for desk, words in DESK_TRIGGERS.items() if (at := _first(question, words)) is not None]
    return [desk for _, desk in sorted(found)]


def is_finance(question: str, named_symbols: list[str]) -> bool:
    return bool(named_symbols or desks(question) or _first(question, FINANCE_WORDS) is not None)
