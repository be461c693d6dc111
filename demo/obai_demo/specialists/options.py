"""options_analysis: payoff profile of a position described in words, in exact decimals.

Understood structures: long/short call, long/short put, long/short straddle, iron condor
(four strikes and a credit), bull call spread and bear put spread (two strikes, a debit).
One contract is 100 shares.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from . import envelope

MULTIPLIER = Decimal(100)
UNLIMITED = "unlimited"
_NUM = r"\$?(\d+(?:\.\d+)?)"
_SHORT = re.compile(r"\b(?:sell|sold|selling|short|naked|write|writing|wrote)\b")


@dataclass
class Position:
    """A parsed position; numbers keep the text the user typed for echoing."""

    structure: str
    ticker: str | None
    strikes: list[str]
    amount: str
    amount_kind: str  # "premium", "credit" or "debit"
    contracts: int = 1
    description: str = ""
    max_profit: Decimal | str = UNLIMITED
    max_loss: Decimal | str = UNLIMITED
    breakevens: list[Decimal] = field(default_factory=list)


def _amount(text: str, word: str) -> str | None:
    patterns = [
        rf"\b{word}\s*(?:of|at|=|:)?\s*{_NUM}",
        rf"{_NUM}\s*(?:total\s+|net\s+)?{word}\b",
    ]
    for pattern in patterns:
        if m := re.search(pattern, text):
            return m.group(1)
    return None


def _strike(text: str) -> str | None:
    for pattern in (rf"\bstrike\s*(?:price\s*)?(?:of|at|=|:)?\s*{_NUM}", rf"{_NUM}\s*strike\b"):
        if m := re.search(pattern, text):
            return m.group(1)
    return None


def _premium(text: str) -> str | None:
    found = _amount(text, "premium")
    if found is None and (m := re.search(rf"\bfor\s+(?:a\s+)?{_NUM}(?!\s*/)", text)):
        found = m.group(1)
    return found


def _strike_list(text: str, count: int) -> list[str] | None:
    pattern = r"\s*/\s*".join([r"(\d+(?:\.\d+)?)"] * count)
    m = re.search(pattern, text)
    return list(m.groups()) if m else None


def parse(request: str, ticker: str | None = None) -> Position | None:
    """The position described in ``request`` (None when it names no known structure)."""
    text = request.lower()
    contracts = int(m.group(1)) if (m := re.search(r"\b(\d+)\s*contracts?\b", text)) else 1
    short = bool(_SHORT.search(text))
    if "iron condor" in text:
        strikes, credit = _strike_list(text, 4), _amount(text, "credit") or _premium(text)
        if strikes and credit:
            return Position("iron_condor", ticker, strikes, credit, "credit", contracts)
        return None
    if "straddle" in text:
        strike, premium = _strike(text), _premium(text)
        if strike and premium:
            kind = "short_straddle" if short else "long_straddle"
            return Position(kind, ticker, [strike], premium, "premium", contracts)
        return None
    if "spread" in text:
        strikes, debit = _strike_list(text, 2), _amount(text, "debit") or _premium(text)
        if strikes and debit:
            kind = "bear_put_spread" if re.search(r"\bputs?\b", text) else "bull_call_spread"
            return Position(kind, ticker, strikes, debit, "debit", contracts)
        return None
    for right in ("call", "put"):
        if re.search(rf"\b{right}s?\b", text):
            strike, premium = _strike(text), _premium(text)
            if strike and premium:
                kind = f"{'short' if short else 'long'}_{right}"
                return Position(kind, ticker, [strike], premium, "premium", contracts)
            return None
    return None


def price(value: Decimal) -> str:
    return f"{value:.2f}"


def money(value: Decimal | str) -> str:
    return value if isinstance(value, str) else f"${value:,.2f}"


def evaluate(pos: Position, wrong_math: bool = False) -> Position:
    """Fill in max profit, max loss and breakevens. ``wrong_math`` is the injected bug."""
    n = MULTIPLIER * pos.contracts
    k = [Decimal(s) for s in pos.strikes]
    a = Decimal(pos.amount)
    on = f" on {pos.ticker}" if pos.ticker else ""
    qty = f"{pos.contracts} contract{'s' if pos.contracts != 1 else ''}"
    s = pos.structure
    if s in ("long_call", "short_call", "long_put", "short_put"):
        right = s.split("_")[1]
        label = {"short_call": "short call (naked)"}.get(s, s.replace("_", " "))
        pos.description = f"{label}{on}, strike {pos.strikes[0]}, premium {pos.amount}, {qty}"
        breakeven = k[0] + a if right == "call" else k[0] - a
        pos.breakevens = [breakeven]
        if s == "long_call":
            pos.max_profit, pos.max_loss = UNLIMITED, a * n
        elif s == "short_call":
            pos.max_profit = a * n
            pos.max_loss = k[0] * n if wrong_math else UNLIMITED
        elif s == "long_put":
            pos.max_profit, pos.max_loss = (k[0] - a) * n, a * n
        else:
            pos.max_profit, pos.max_loss = a * n, (k[0] - a) * n
    elif s in ("long_straddle", "short_straddle"):
        pos.description = f"{s.replace('_', ' ')}{on}, strike {pos.strikes[0]}, total premium {pos.amount}, {qty}"
        pos.breakevens = [k[0] - a, k[0] + a]
        if s == "long_straddle":
            pos.max_profit, pos.max_loss = UNLIMITED, a * n
        else:
            pos.max_profit, pos.max_loss = a * n, UNLIMITED
    elif s == "iron_condor":
        lp, sp, sc, lc = sorted(k)
        pos.description = f"iron condor{on}, strikes {'/'.join(pos.strikes)}, net credit {pos.amount}, {qty}"
        width = max(sp - lp, lc - sc)
        pos.max_profit, pos.max_loss = a * n, (width - a) * n
        pos.breakevens = [sp - a] if wrong_math else [sp - a, sc + a]
    elif s in ("bull_call_spread", "bear_put_spread"):
        low, high = sorted(k)
        pos.description = f"{s.replace('_', ' ')}{on}, strikes {'/'.join(pos.strikes)}, net debit {pos.amount}, {qty}"
        pos.max_profit, pos.max_loss = (high - low - a) * n, a * n
        pos.breakevens = [low + a] if s == "bull_call_spread" else [high - a]
    return pos


def render(pos: Position) -> str:
    capped = lambda v: money(v) + ("" if isinstance(v, str) else " (capped)")  # noqa: E731
    lines = [
        f"Position: {pos.description}",
        f"Multiplier: {MULTIPLIER} shares per contract",
        f"Max profit: {capped(pos.max_profit)}",
        f"Max loss: {capped(pos.max_loss)}",
    ]
    if len(pos.breakevens) == 1:
        lines.append(f"Breakeven: {price(pos.breakevens[0])}")
    else:
        lines.append("Breakevens: " + " and ".join(price(b) for b in pos.breakevens))
    return "\n".join(lines)


def _json(value: Decimal | str) -> float | str:
    return value if isinstance(value, str) else float(value)


def analyse(request: str, ticker: str | None = None, wrong_math: bool = False) -> dict[str, Any]:
    pos = parse(request, ticker)
    if pos is None:
        text = ("Could not identify an options position in the request: name the structure "
                "(call, put, straddle, iron condor, call or put spread), the strikes and the premium.")
        return envelope(text, {"structure": None})
    evaluate(pos, wrong_math)
    structured = {
        "structure": pos.structure,
        "ticker": pos.ticker,
        "strikes": [float(Decimal(s)) for s in pos.strikes],
        pos.amount_kind: float(Decimal(pos.amount)),
        "contracts": pos.contracts,
        "max_profit": _json(pos.max_profit),
        "max_loss": _json(pos.max_loss),
        "max_loss_capped": not isinstance(pos.max_loss, str),
        "breakevens": [float(b) for b in pos.breakevens],
    }
    return envelope(render(pos), structured)
