"""The bundled book of figures: quotes and annual financials for a few companies."""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources


@dataclass(frozen=True)
class Company:
    """One listed company as the book has it."""

    symbol: str
    name: str
    aliases: tuple[str, ...]
    close: Decimal
    prev_close: Decimal
    high_52w: Decimal
    high_52w_date: str
    low_52w: Decimal
    low_52w_date: str
    avg_volume: int
    fiscal_year: int
    revenue_bn: Decimal
    net_income_bn: Decimal
    pe: Decimal
    eps: Decimal


@dataclass(frozen=True)
class Book:
    """All companies, and the date the quotes are from."""

    as_of: str
    companies: dict[str, Company]

    def find(self, text: str) -> list[str]:
        """Symbols named in ``text`` (ticker in capitals, or company name), in order of first mention."""
        hits: list[tuple[int, str]] = []
        for symbol, company in self.companies.items():
            at = [m.start() for m in re.finditer(rf"(?<![A-Za-z]){symbol}(?![A-Za-z])", text)]
            for alias in company.aliases:
                at += [m.start() for m in re.finditer(rf"(?<![A-Za-z]){re.escape(alias)}(?![A-Za-z])", text,
                                                      flags=re.IGNORECASE)]
            if at:
                hits.append((min(at), symbol))
        return [s for _, s in sorted(hits)]


@functools.lru_cache(maxsize=1)
def load() -> Book:
    raw = json.loads(resources.files("ledger_agent").joinpath("data/book.json").read_text(encoding="utf-8"))
    companies = {}
    for symbol, c in raw["companies"].items():
        companies[symbol] = Company(
            symbol=symbol, name=c["name"], aliases=tuple(c["aliases"]),
            close=Decimal(c["close"]), prev_close=Decimal(c["prev_close"]),
            high_52w=Decimal(c["high_52w"]), high_52w_date=c["high_52w_date"],
            low_52w=Decimal(c["low_52w"]), low_52w_date=c["low_52w_date"],
            avg_volume=int(c["avg_volume"]), fiscal_year=int(c["fiscal_year"]),
            revenue_bn=Decimal(c["revenue_bn"]), net_income_bn=Decimal(c["net_income_bn"]),
            pe=Decimal(c["pe"]), eps=Decimal(c["eps"]),
        )
    return Book(as_of=raw["as_of"], companies=companies)
