"""The desks (specialists): quotes, financials and derivs.

A desk answers with an output for its span (``{"status": "ok", "body": <text>, ...}``)
and the sentences the reply may use; every figure in those sentences is written exactly
as the body writes it, so the reply is grounded in what the desks said.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from .book import Book, Company

CENT = Decimal("0.01")
MULTIPLIER = 100


@dataclass
class DeskResult:
    """A desk's span output and the sentences the reply may take from it."""

    output: dict
    sentences: list[str] = field(default_factory=list)


def money(value: Decimal) -> str:
    return f"{value.quantize(CENT, rounding=ROUND_HALF_UP):,}"


def signed(value: Decimal) -> str:
    return ("+" if value > 0 else "-" if value < 0 else "") + money(abs(value))


def _pct(value: Decimal) -> str:
    q = value.quantize(CENT, rounding=ROUND_HALF_UP)
    return ("+" if q > 0 else "") + f"{q}%"


def _no_symbol(book: Book) -> DeskResult:
    covered = ", ".join(book.companies)
    return DeskResult({"status": "ok", "body": f"No company named. Covered: {covered}."},
                      [f"Which company do you mean? I cover {covered}."])


def quotes(question: str, symbols: list[str], book: Book) -> DeskResult:
    if not symbols:
        return _no_symbol(book)
    blocks, sentences = [], []
    wants_range = re.search(r"(?i)52-week|range|high|low", question) is not None
    wants_volume = re.search(r"(?i)volume", question) is not None
    for s in symbols:
        c = book.companies[s]
        change = _pct((c.close / c.prev_close - 1) * 100)
        blocks.append("\n".join([
            f"{c.symbol} · {c.name} · as of {book.as_of}",
            f"{money(c.close)} close",
            f"{change} against the previous close of {money(c.prev_close)}",
            f"{money(c.high_52w)} 52-week high ({c.high_52w_date})",
            f"{money(c.low_52w)} 52-week low ({c.low_52w_date})",
            f"{c.avg_volume:,} shares average daily volume",
        ]))
        sentence = f"{c.name} ({c.symbol}) closed at {money(c.close)} on {book.as_of}, {change} on the day."
        if wants_range:
            sentence += (f" Its 52-week range runs from {money(c.low_52w)} ({c.low_52w_date}) "
                         f"to {money(c.high_52w)} ({c.high_52w_date}).")
        if wants_volume:
            sentence += f" Average daily volume: {c.avg_volume:,} shares."
        sentences.append(sentence)
    return DeskResult({"status": "ok", "body": "\n\n".join(blocks)}, sentences)


def _margin(c: Company) -> str:
    return f"{(c.net_income_bn / c.revenue_bn * 100).quantize(CENT, rounding=ROUND_HALF_UP)}%"


def financials(question: str, symbols: list[str], book: Book) -> DeskResult:
    if not symbols:
        return _no_symbol(book)
    blocks, sentences = [], []
    for s in symbols:
        c = book.companies[s]
        blocks.append("\n".join([
            f"{c.symbol} · {c.name} · fiscal {c.fiscal_year}",
            f"Revenue: {c.revenue_bn} bn",
            f"Net income: {c.net_income_bn} bn",
            f"Net margin: {_margin(c)}",
            f"P/E: {c.pe}",
            f"EPS: {c.eps}",
        ]))
        sentences.append(f"{c.name} ({c.symbol}), fiscal {c.fiscal_year}: net margin {_margin(c)} on revenue of "
                         f"{c.revenue_bn} bn; P/E {c.pe}, EPS {c.eps}.")
    return DeskResult({"status": "ok", "body": "\n\n".join(blocks)}, sentences)


# ---------------------------------------------------------------- derivatives

_NUM = r"(\d+(?:\.\d+)?)"


def _find(patterns: list[str], text: str) -> Decimal | None:
    for p in patterns:
        m = re.search(p, text, flags=re.IGNORECASE)
        if m:
            return Decimal(next(g for g in m.groups() if g))
    return None


@dataclass(frozen=True)
class Position:
    """An option position read from the question."""

    kind: str            # short_call, long_call, short_put, long_put, long_straddle, iron_condor
    symbol: str
    strikes: tuple[Decimal, ...]
    price: Decimal       # premium paid or received, or the condor's credit
    contracts: int

    @property
    def label(self) -> str:
        return self.kind.replace("_", " ").capitalize()


def read_position(question: str, symbols: list[str]) -> Position | str:
    """The position, or a sentence saying what is missing."""
    symbol = symbols[0] if symbols else "AAPL"
    n = _find([r"(\d+)\s+contracts?\b"], question)
    contracts = int(n) if n else 1
    q = question.lower()
    if "iron condor" in q:
        m = re.search(r"(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)", question)
        credit = _find([rf"credit(?:\s+of)?\s+{_NUM}", rf"{_NUM}\s+credit", rf"\bfor\s+{_NUM}"], question)
        if not m or credit is None:
            return "Need four strikes (a/b/c/d) and the credit to price an iron condor."
        strikes = tuple(sorted(Decimal(g) for g in m.groups()))
        return Position("iron_condor", symbol, strikes, credit, contracts)
    strike = _find([rf"strike(?:\s+(?:of|at))?\s+{_NUM}", rf"{_NUM}[ -]strike", rf"\bat\s+{_NUM}"], question)
    premium = _find([rf"premium(?:\s+of)?\s+{_NUM}", rf"{_NUM}\s+premium", rf"\bfor\s+{_NUM}"], question)
    if "straddle" in q:
        kind = "long_straddle"
    else:
        right = "put" if re.search(r"\bputs?\b", q) else "call"
        side = "short" if re.search(r"\b(sell|sold|selling|short|naked|write|writing)\b", q) else "long"
        kind = f"{side}_{right}"
    if strike is None or premium is None:
        return f"Need the strike and the premium to price a {kind.replace('_', ' ')}."
    return Position(kind, symbol, (strike,), premium, contracts)


def payoff(p: Position, slip: bool = False) -> dict:
    """Best case, worst case (None: no limit) and break-evens at expiry, per the whole position."""
    size = MULTIPLIER * p.contracts
    k = p.strikes[0]
    if p.kind == "iron_condor":
        a, b, c, d = p.strikes
        best, worst = p.price * size, (max(b - a, d - c) - p.price) * size
        evens = [b - p.price, c + p.price]
        if slip:
            evens = evens[:1]
    elif p.kind == "long_straddle":
        best, worst, evens = None, p.price * size, [k - p.price, k + p.price]
    elif p.kind == "short_call":
        best, worst, evens = p.price * size, None, [k + p.price]
        if slip:
            worst = k * size / 20
    elif p.kind == "long_call":
        best, worst, evens = None, p.price * size, [k + p.price]
    elif p.kind == "short_put":
        best, worst, evens = p.price * size, (k - p.price) * size, [k - p.price]
    else:  # long_put
        best, worst, evens = (k - p.price) * size, p.price * size, [k - p.price]
    return {"best": best, "worst": worst, "evens": evens}


def derivs(question: str, symbols: list[str], slip: bool = False) -> DeskResult:
    p = read_position(question, symbols)
    if isinstance(p, str):
        return DeskResult({"status": "ok", "body": p}, [p])
    f = payoff(p, slip)
    strikes = "/".join(str(s) for s in p.strikes)
    noun = "strikes" if len(p.strikes) > 1 else "strike"
    price_word = "credit" if p.kind == "iron_condor" else "premium"
    contracts = f"{p.contracts} contract{'s' if p.contracts != 1 else ''}"
    best = "no limit" if f["best"] is None else signed(f["best"])
    worst = "no limit" if f["worst"] is None else signed(-f["worst"])
    evens = " and ".join(money(e) for e in f["evens"])
    body = "\n".join([
        f"{p.label} · {p.symbol} · {noun} {strikes} · {price_word} {p.price} · {contracts} "
        f"({MULTIPLIER * p.contracts} shares)",
        f"Best case: {best}",
        f"Worst case: {worst}",
        f"Break-even at expiry: {evens}",
    ])
    figures = {
        "position": p.kind, "symbol": p.symbol, "contracts": p.contracts,
        "max_profit": "unbounded" if f["best"] is None else money(f["best"]).replace(",", ""),
        "max_loss": "unbounded" if f["worst"] is None else money(f["worst"]).replace(",", ""),
        "breakevens": [money(e).replace(",", "") for e in f["evens"]],
    }
    sentence = (f"{p.label} on {p.symbol} ({noun} {strikes}, {price_word} {p.price}, {contracts}): "
                f"best case {best}, worst case {worst}; break-even at expiry {evens}.")
    return DeskResult({"status": "ok", "body": body, "figures": figures}, [sentence])
