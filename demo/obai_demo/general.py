"""Short explanations for general finance questions that need no specialist.

The guardrail lets general finance questions through ("What is a bond?", "ETF or single
stocks?"), so the assistant answers them in plain words, with no figures (nothing here
comes from a specialist, so nothing here may carry a number). A question none of the topics
covers gets the list of what the assistant can look up.
"""
from __future__ import annotations

from .routing import first_position

GENERIC = (
    "I can help with market prices, company fundamentals, strategy backtests, prediction "
    "markets and options payoffs. Ask about a specific ticker, strategy or position."
)
NOT_ADVICE = "This is general information, not personal advice: your goals, time horizon and tolerance for losses decide."

# (words that name the topic, the explanation); a topic needs all its words in the query,
# and the topic whose words come first in the list wins.
TOPICS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("etf", "stocks"),
     "For most investors a broad, low-cost ETF is the better core holding. One ETF spreads your money over "
     "many companies, so a single company's bad news hurts little, and it needs no research of individual "
     "firms. Single stocks can beat the market, but they concentrate risk in a few companies and take time "
     "to research and follow; they suit money you can afford to see swing hard. A common middle way is an "
     "ETF as the core and a few single stocks on the side. " + NOT_ADVICE),
    (("bond",),
     "A bond is a loan you make to a government or a company. The issuer promises to pay you interest "
     "(the coupon) at set times and to repay the amount borrowed (the face value) on a fixed date, the "
     "maturity. Bonds are usually steadier than stocks: the return is agreed in advance, and bondholders "
     "are paid before shareholders if the issuer gets into trouble. Their risks are that the issuer "
     "defaults, and that when interest rates rise, existing bonds paying less lose market value."),
    (("etf",),
     "An ETF (exchange-traded fund) is a fund that holds a basket of assets, such as all the stocks of an "
     "index, and trades on an exchange like a single stock. Buying one share gives you a slice of the whole "
     "basket, usually at a low yearly fee."),
    (("inflation",),
     "Inflation is the rise of the general price level: the same money buys less over time. Central banks "
     "try to keep it low and stable, mostly by raising interest rates when it runs too high."),
)


def answer(query: str) -> str:
    """The explanation of the first topic the query names, or the list of what can be looked up."""
    for words, text in TOPICS:
        if all(_has(query, w) for w in words):
            return text
    return GENERIC


def _has(query: str, word: str) -> bool:
    return any(first_position(query, (form,)) is not None for form in (word, word + "s"))
