"""Which desks a question needs, in the order the question asks for them, and with what arguments."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .book import symbols

QUOTE_WORDS = ("price", "close", "closed", "quote", "trading", "traded")
FINANCIAL_WORDS = ("revenue", "margin", "earnings", "p/e", "net income", "valuation")
PLAYBOOKS = {"quote_lookup": "market-data", "company_financials": "filings", "option_payoff": "derivatives"}


@dataclass(frozen=True)
class Call:
    """One tool call the model will ask for."""

    tool: str
    args: dict


def _first(text: str, words: tuple[str, ...]) -> int | None:
    hits = [m.start() for w in words for m in [re.search(rf"(?<![\w/]){re.escape(w)}(?![\w/])", text)] if m]
    return min(hits) if hits else None


def _option(text: str) -> str | None:
    condor = re.search(r"iron condor\D*(\d+)/(\d+)/(\d+)/(\d+)\D+?(\d+(?:\.\d+)?)\s*credit", text)
    if condor:
        return "iron condor {}/{}/{}/{} credit {}".format(*condor.groups())
    if re.search(r"\b(naked|short) call\b|\bsell (a|one) call\b", text):
        strike = re.search(r"strike (\d+(?:\.\d+)?)", text)
        premium = re.search(r"(\d+(?:\.\d+)?) premium|premium (?:of )?(\d+(?:\.\d+)?)", text)
        if strike and premium:
            return f"short call {strike.group(1)} premium {premium.group(1) or premium.group(2)}"
    return None


def plan(question: str) -> list[Call]:
    """The tool calls a question needs: desks in the order their first word appears, one call per company."""
    text = question.lower()
    names = symbols(question)
    found: list[tuple[int, list[Call]]] = []
    at = _first(text, QUOTE_WORDS)
    if at is not None and names:
        found.append((at, [Call("quote_lookup", {"symbol": s}) for s in names]))
    at = _first(text, FINANCIAL_WORDS)
    if at is not None and names:
        found.append((at, [Call("company_financials", {"symbol": s}) for s in names]))
    position = _option(text)
    if position:
        found.append((_first(text, ("condor", "call")) or 0, [Call("option_payoff", {"position": position})]))
    return [c for _, calls in sorted(found, key=lambda f: f[0]) for c in calls]


def playbooks(calls: list[Call]) -> list[str]:
    """The playbooks (skills) the calls need, each once, in call order."""
    out: list[str] = []
    for c in calls:
        if PLAYBOOKS[c.tool] not in out:
            out.append(PLAYBOOKS[c.tool])
    return out
