"""The hub-to-strategy instruction text: written by the hub, parsed by the strategy specialist.

The hub restates the user's numbers exactly as typed (``30``, ``RSI(14)``, ``1.5%``,
``9:45``) with the operators as symbols, e.g.::

    Backtest AAPL on daily closes: BUY when RSI(14) < 30; SELL when RSI(14) > 70; stop loss 1.5%; entry time 9:45

The specialist backtests whatever this text says, so a paraphrase here is what runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from . import routing
from .universe import DEFAULT_TICKER, TICKERS

ASYNC_PHRASES = ("in the background", "across all tickers", "full history")
BACKGROUND_CLAUSE = "run in background"
FULL_HISTORY_CLAUSE = "full history"
DEFAULT_PERIOD = "14"
DEFAULT_LOWER = "30"
DEFAULT_UPPER = "70"

_NUM = r"(\d+(?:\.\d+)?)"
_PERIOD = [
    re.compile(r"\bRSI\s*\(\s*(\d+)\s*\)", re.IGNORECASE),
    re.compile(r"\bRSI[\s-]*(\d+)\b(?!\s*(?:%|\.\d))", re.IGNORECASE),
    re.compile(r"\b(\d+)[\s-]*(?:day|period|bar)s?\s+RSI\b", re.IGNORECASE),
]
_LOWER = re.compile(r"(?:\b(?:below|under|beneath|less than)|<)\s*" + _NUM, re.IGNORECASE)
_UPPER = re.compile(r"(?:\b(?:above|over|exceeds|greater than)|>)\s*" + _NUM, re.IGNORECASE)
_STOP = [
    re.compile(_NUM + r"\s*%\s*(?:trailing\s+)?stop", re.IGNORECASE),
    re.compile(r"\bstop(?:[\s-]*loss)?\s*(?:of|at|:)?\s*" + _NUM + r"\s*%", re.IGNORECASE),
]
_TIME = re.compile(r"\b(\d{1,2}:\d{2})\b")


def is_async(query: str) -> bool:
    """Whether the user asked for a queued (background) backtest."""
    lowered = query.lower()
    return any(phrase in lowered for phrase in ASYNC_PHRASES)


def _first(patterns: list[re.Pattern[str]], text: str) -> str | None:
    for pattern in patterns:
        if m := pattern.search(text):
            return m.group(1)
    return None


def _without_period(text: str) -> str:
    # Drop RSI period tokens so that "RSI(14) below 30" yields 30, not 14.
    for pattern in _PERIOD:
        text = pattern.sub("RSI", text)
    return text


def write_spec(query: str, *, paraphrase: bool = False) -> str:
    """The instruction the hub sends to strategy_analysis for ``query``.

    With ``paraphrase`` the integer thresholds gain a decimal and ``RSI(n)`` becomes
    ``RSI n``: the same backtest in different words.
    """
    named = routing.tickers(query) or [DEFAULT_TICKER]
    period = _first(_PERIOD, query) or DEFAULT_PERIOD
    rest = _without_period(query)
    lower = (m.group(1) if (m := _LOWER.search(rest)) else None) or DEFAULT_LOWER
    upper = (m.group(1) if (m := _UPPER.search(rest)) else None) or DEFAULT_UPPER
    stop = _first(_STOP, rest)
    entry = (m.group(1) if (m := _TIME.search(query)) else None)

    rsi = f"RSI {period}" if paraphrase else f"RSI({period})"
    if paraphrase:
        lower, upper = (f"{v}.0" if v.isdigit() else v for v in (lower, upper))
    clauses = [f"BUY when {rsi} < {lower}", f"SELL when {rsi} > {upper}"]
    if stop is not None:
        clauses.append(f"stop loss {stop}%")
    if entry is not None:
        clauses.append(f"entry time {entry}")
    if FULL_HISTORY_CLAUSE in query.lower():
        clauses.append(FULL_HISTORY_CLAUSE)
    if is_async(query):
        clauses.append(BACKGROUND_CLAUSE)
    return f"Backtest {', '.join(named)} on daily closes: " + "; ".join(clauses)


@dataclass(frozen=True)
class StrategySpec:
    """What the strategy specialist understood from the instruction text."""

    tickers: tuple[str, ...]
    period: int
    lower: Decimal
    upper: Decimal
    stop_pct: Decimal | None
    entry_time: str | None
    background: bool
    full_history: bool = False


def _clause(spec: str, verb: str) -> str | None:
    m = re.search(rf"\b{verb}\b([^;]*)", spec, re.IGNORECASE)
    return m.group(1) if m else None


def _threshold(clause: str | None, default: str) -> Decimal:
    if clause is None:
        return Decimal(default)
    m = re.search(_NUM, _without_period(clause))
    return Decimal(m.group(1)) if m else Decimal(default)


def parse_spec(spec: str) -> StrategySpec:
    """Read tickers, RSI period, thresholds, stop and entry time from the instruction."""
    head = spec.split(":", 1)[0]
    if re.search(r"\ball tickers\b", head, re.IGNORECASE):
        named = list(TICKERS)
    else:
        named = [t for t in re.findall(r"\b[A-Z]{1,5}\b", head) if t in TICKERS] or [DEFAULT_TICKER]
    period = re.search(r"\bRSI\s*\(?\s*(\d+)", spec, re.IGNORECASE)
    stop = re.search(r"\bstop(?:[\s-]*loss)?\s*(?:of|at|:)?\s*" + _NUM + r"\s*%", spec, re.IGNORECASE)
    entry = re.search(r"\bentry(?:\s*time)?\s*(?:at|:)?\s*(\d{1,2}:\d{2})", spec, re.IGNORECASE)
    return StrategySpec(
        tickers=tuple(dict.fromkeys(named)),
        period=int(period.group(1)) if period else int(DEFAULT_PERIOD),
        lower=_threshold(_clause(spec, "BUY"), DEFAULT_LOWER),
        upper=_threshold(_clause(spec, "SELL"), DEFAULT_UPPER),
        stop_pct=Decimal(stop.group(1)) if stop else None,
        entry_time=entry.group(1) if entry else None,
        background=BACKGROUND_CLAUSE in spec.lower() or "in the background" in spec.lower(),
        full_history=FULL_HISTORY_CLAUSE in spec.lower(),
    )


def plain(value: Decimal) -> str:
    """A threshold as the operator list prints it: 30.0 -> 30, 1.50 -> 1.5."""
    return format(value.normalize(), "f")
