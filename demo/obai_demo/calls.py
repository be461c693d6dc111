"""What the hub asks each specialist: the request in words plus its parameters."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import asks, routing
from .specialists.fundamentals import label as metric_label
from .strategy_spec import write_spec
from .universe import DEFAULT_TICKER

# phrase -> fundamentals metric, longest phrases first so "net income" beats "income"
METRIC_PHRASES: tuple[tuple[str, str], ...] = (
    ("dividend yield", "dividend_yield_pct"),
    ("debt to equity", "debt_to_equity"),
    ("debt-to-equity", "debt_to_equity"),
    ("profit margin", "net_margin_pct"),
    ("net margin", "net_margin_pct"),
    ("net income", "net_income_bn"),
    ("margins", "net_margin_pct"),
    ("margin", "net_margin_pct"),
    ("revenue", "revenue_bn"),
    ("sales", "revenue_bn"),
    ("earnings", "net_income_bn"),
    ("profit", "net_income_bn"),
    ("valuation", "pe"),
    ("p/e", "pe"),
    ("eps", "eps"),
    ("debt", "debt_to_equity"),
    ("leverage", "debt_to_equity"),
    ("dividend", "dividend_yield_pct"),
)
RANKING_WORDS = ("top", "highest", "lowest", "best", "worst", "largest", "smallest", "rank",
                 "ranking", "cheapest", "bottom", "most", "least")
ASCENDING_WORDS = ("lowest", "smallest", "cheapest", "bottom", "least", "worst")
NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
MOVING_AVERAGE_WORDS = ("moving average", "moving averages", "50-day", "200-day", "sma")
# Added to a fundamentals request when the user asks for a valuation judgement.
PEERS_CLAUSE = "with the P/E of every covered ticker for comparison"


@dataclass(frozen=True)
class Call:
    """One planned specialist call: its name and the span input."""

    specialist: str
    inputs: dict[str, Any]


def _metric(query: str) -> str | None:
    lowered = query.lower()
    hits = []
    for phrase, metric in METRIC_PHRASES:
        if (pos := routing.first_position(lowered, (phrase,))) is not None:
            hits.append((pos, -len(phrase), metric))
    return min(hits)[2] if hits else None


def _top_n(query: str) -> int:
    lowered = query.lower()
    if m := re.search(r"\b(?:top|bottom|best|worst)\s+(\d+|" + "|".join(NUMBER_WORDS) + r")\b", lowered):
        word = m.group(1)
        return int(word) if word.isdigit() else NUMBER_WORDS[word]
    return 3


def market_data(query: str, tickers: list[str]) -> Call:
    wanted = tickers or [DEFAULT_TICKER]
    ma = routing.contains_any(query, MOVING_AVERAGE_WORDS)
    request = (f"Latest close, 1-day change, 52-week high and low and 30-day average volume "
               f"for {', '.join(wanted)}" + (", with 50-day and 200-day moving averages" if ma else ""))
    return Call("market_data_analysis", {"request": request, "tickers": wanted, "moving_averages": ma})


def fundamentals(query: str, tickers: list[str]) -> Call:
    metric = _metric(query)
    if metric and routing.contains_any(query, RANKING_WORDS):
        n = _top_n(query)
        descending = not routing.contains_any(query, ASCENDING_WORDS)
        request = (f"Rank all covered tickers by {metric_label(metric)}, "
                   f"{'highest' if descending else 'lowest'} first, and return the top {n}")
        inputs = {"request": request, "tickers": [], "rank_by": metric, "top_n": n, "descending": descending}
    else:
        wanted = tickers or [DEFAULT_TICKER]
        request = f"Fundamentals (revenue, margins, valuation, debt, dividend) for {', '.join(wanted)}"
        if routing.contains_any(query, asks.ASSESS_WORDS):
            request += f", {PEERS_CLAUSE}"
        inputs = {"request": request, "tickers": wanted, "rank_by": None, "top_n": None, "descending": True}
    return Call("fundamentals_analysis", inputs)


def strategy(query: str, paraphrase: bool = False) -> Call:
    return Call("strategy_analysis", {"spec": write_spec(query, paraphrase=paraphrase)})


def prediction(query: str) -> Call:
    request = f"Find prediction markets matching: {query}"
    years = [f"{phrase}: {year}" for phrase, year in asks.relative_years(query).items()]
    if years:
        request += f" ({'; '.join(years)})"
    return Call("prediction_market_analysis", {"request": request})


def options(query: str, tickers: list[str]) -> Call:
    request = f"Payoff profile (max profit, max loss, breakevens) of this position: {query}"
    return Call("options_analysis", {"request": request, "ticker": tickers[0] if tickers else None})


def build(name: str, query: str, paraphrase: bool = False) -> Call:
    """The call the hub makes to specialist ``name`` for ``query``."""
    tickers = routing.tickers(query)
    if name == "market_data_analysis":
        return market_data(query, tickers)
    if name == "fundamentals_analysis":
        return fundamentals(query, tickers)
    if name == "strategy_analysis":
        return strategy(query, paraphrase)
    if name == "prediction_market_analysis":
        return prediction(query)
    if name == "options_analysis":
        return options(query, tickers)
    raise KeyError(name)


def plan(query: str, paraphrase: bool = False) -> list[Call]:
    """The specialist calls for ``query``, in routing order."""
    return [build(name, query, paraphrase) for name in routing.specialists(query)]
