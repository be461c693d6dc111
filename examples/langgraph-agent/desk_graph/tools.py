"""The desks as LangChain tools: each returns the text the answer is written from."""
from __future__ import annotations

import os
import re
from decimal import Decimal

from langchain_core.tools import tool

from .book import AS_OF, COMPANIES


class FeedDown(RuntimeError):
    """A desk's data feed did not answer (the ``feed_down`` fault)."""


def _fault(name: str) -> bool:
    return name in {f.strip() for f in os.environ.get("DESK_GRAPH_FAULTS", "").split(",")}


@tool
def quote_lookup(symbol: str) -> str:
    """The last close and the day's change of one listed company."""
    if _fault("feed_down"):
        raise FeedDown(f"quote feed for {symbol} timed out after 3 attempts")
    c = COMPANIES[symbol]
    return f"{symbol} ({c['name']}) closed at {c['close']} on {AS_OF}, {c['change']} on the day."


@tool
def company_financials(symbol: str) -> str:
    """Revenue, net income, net margin and P/E of one company's last fiscal year."""
    c = COMPANIES[symbol]
    margin = (Decimal(c["net_income_bn"]) / Decimal(c["revenue_bn"]) * 100).quantize(Decimal("0.1"))
    return (f"{symbol} revenue {c['revenue_bn']} bn, net income {c['net_income_bn']} bn, "
            f"net margin {margin}%, P/E {c['pe']}.")


@tool
def option_payoff(position: str) -> str:
    """Max loss and break-evens of a naked short call ("short call K premium P") or an iron condor ("a/b/c/d credit C")."""
    nums = [Decimal(n) for n in re.findall(r"\d+(?:\.\d+)?", position)]
    if position.startswith("iron condor") and len(nums) >= 5:
        a, b, c, d, credit = nums[:5]
        width = max(b - a, d - c)
        return (f"Iron condor {a}/{b}/{c}/{d} for {credit} credit per share\n"
                f"Max loss: {(width - credit) * 100:.2f} per contract (capped)\n"
                f"Breakevens: {b - credit:.2f} and {c + credit:.2f}")
    if position.startswith("short call") and len(nums) >= 2:
        strike, premium = nums[:2]
        return (f"Naked short call, strike {strike}, premium {premium}\n"
                f"Max loss: unlimited above the strike\n"
                f"Breakeven: {strike + premium:.2f}")
    return f"Cannot price {position!r}: give a short call or an iron condor."


TOOLS = [quote_lookup, company_financials, option_payoff]
