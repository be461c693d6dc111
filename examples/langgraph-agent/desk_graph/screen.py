"""The screen: questions about markets and listed companies pass, everything else is blocked."""
from __future__ import annotations

import re

from .book import symbols

REFUSAL = "I can only help with questions about markets and listed companies."
FINANCE_WORDS = ("price", "stock", "stocks", "share", "shares", "market", "markets", "revenue", "margin", "earnings",
                 "dividend", "invest", "investing", "portfolio", "valuation", "p/e", "option", "options", "call",
                 "put", "condor", "strike", "premium", "bond", "bonds", "etf", "quote", "trading")


def screen(question: str, *, strict: bool = False) -> dict:
    """The screen's decision: ``{"verdict": "pass" | "block", "reason": ...}``.

    ``strict`` (the strict_screen fault) blocks questions that name a company as well.
    """
    named = symbols(question)
    words = [w for w in FINANCE_WORDS if re.search(rf"(?<![\w/]){re.escape(w)}(?![\w/])", question.lower())]
    if strict and named:
        return {"verdict": "block", "reason": f"policy v2 blocks single-company questions ({', '.join(named)})"}
    if named or words:
        return {"verdict": "pass", "reason": "names " + ", ".join(named) if named else "finance words: " + ", ".join(words)}
    return {"verdict": "block", "reason": "no market or company topic"}
