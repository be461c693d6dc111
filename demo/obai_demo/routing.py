"""Which specialists a query needs, in which order, and which tickers it names.

Triggers are whole words or phrases, matched case-insensitively. Specialists are called
in the order of their first trigger in the query, each at most once.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .universe import COMPANY_ALIASES, TICKERS

SPECIALIST_TRIGGERS: dict[str, tuple[str, ...]] = {
    "market_data_analysis": (
        "price", "prices", "quote", "quotes", "trading", "volume", "52-week", "performance",
        "close", "closing", "moving average", "moving averages",
    ),
    "fundamentals_analysis": (
        "margin", "margins", "revenue", "earnings", "eps", "p/e", "valuation", "debt",
        "fundamentals", "dividend", "dividends",
    ),
    "strategy_analysis": ("backtest", "backtesting", "strategy", "rsi"),
    "prediction_market_analysis": (
        "prediction market", "prediction markets", "polymarket", "odds", "probability", "chance",
    ),
    "options_analysis": (
        "option", "options", "call", "put", "iron condor", "straddle", "spread",
        "breakeven", "breakevens", "payoff",
    ),
}

FINANCE_WORDS: tuple[str, ...] = (
    "stock", "stocks", "market", "markets", "invest", "investing", "investment", "portfolio",
    "bond", "bonds", "etf", "etfs", "dividend", "inflation", "interest rate", "interest rates",
    "fed", "crypto", "bitcoin", "earnings", "finance", "financial",
)

JOB_MENTION = re.compile(r"\bjob\s*(?:id\s*)?(?:#\s*)?(\d{4})\b", re.IGNORECASE)
ALL_TICKERS = re.compile(r"\b(?:across|for|on)\s+all\s+tickers\b", re.IGNORECASE)


@lru_cache(maxsize=None)
def _phrase(phrase: str) -> re.Pattern[str]:
    # Letters and digits delimit words; '-', '/' and '(' do not glue a trigger to a word.
    return re.compile(r"(?<![a-z0-9])" + re.escape(phrase) + r"(?![a-z0-9])")


def first_position(text: str, phrases: tuple[str, ...]) -> int | None:
    """Index of the earliest whole-word occurrence of any phrase in ``text``."""
    lowered = text.lower()
    hits = [m.start() for p in phrases if (m := _phrase(p).search(lowered))]
    return min(hits) if hits else None


def contains_any(text: str, phrases: tuple[str, ...]) -> bool:
    return first_position(text, phrases) is not None


def specialists(query: str) -> list[str]:
    """Specialists the query triggers, ordered by their first trigger's position."""
    found = []
    for name, triggers in SPECIALIST_TRIGGERS.items():
        pos = first_position(query, triggers)
        if pos is not None:
            found.append((pos, name))
    return [name for _, name in sorted(found)]


def tickers(query: str) -> list[str]:
    """Tickers named in the query (symbols or company names), in order of appearance."""
    if ALL_TICKERS.search(query):
        return list(TICKERS)
    lowered = query.lower()
    hits: list[tuple[int, str]] = []
    for symbol in TICKERS:
        if m := _phrase(symbol.lower()).search(lowered):
            hits.append((m.start(), symbol))
    for alias, symbol in COMPANY_ALIASES.items():
        if m := _phrase(alias).search(lowered):
            hits.append((m.start(), symbol))
    ordered: list[str] = []
    for _, symbol in sorted(hits):
        if symbol not in ordered:
            ordered.append(symbol)
    return ordered


def job_mention(query: str) -> str | None:
    """The job id a follow-up query asks about (``job 4821``), if any."""
    m = JOB_MENTION.search(query)
    return m.group(1) if m else None
