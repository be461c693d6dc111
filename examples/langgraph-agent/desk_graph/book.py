"""The figures the desks answer from: a few companies, as of one date (hand-written, offline)."""
from __future__ import annotations

import re

AS_OF = "2026-06-12"

COMPANIES = {
    "AAPL": {"name": "Apple", "close": "214.55", "change": "+1.12%", "revenue_bn": "404.8", "net_income_bn": "102.6",
             "pe": "30.9"},
    "MSFT": {"name": "Microsoft", "close": "472.10", "change": "-0.38%", "revenue_bn": "276.3", "net_income_bn": "98.7",
             "pe": "35.2"},
    "NVDA": {"name": "NVIDIA", "close": "133.84", "change": "+2.47%", "revenue_bn": "148.9", "net_income_bn": "76.1",
             "pe": "44.6"},
    "KO": {"name": "Coca-Cola", "close": "70.21", "change": "+0.15%", "revenue_bn": "47.1", "net_income_bn": "10.9",
           "pe": "25.4"},
}
ALIASES = {info["name"].lower(): sym for sym, info in COMPANIES.items()} | {"nvidia": "NVDA", "coke": "KO"}


def symbols(text: str) -> list[str]:
    """The companies a question names, in the order it names them."""
    found: list[tuple[int, str]] = []
    for sym in COMPANIES:
        m = re.search(rf"\b{sym}\b", text)
        if m:
            found.append((m.start(), sym))
    for alias, sym in ALIASES.items():
        m = re.search(rf"\b{re.escape(alias)}\b", text, re.IGNORECASE)
        if m:
            found.append((m.start(), sym))
    out: list[str] = []
    for _, sym in sorted(found):
        if sym not in out:
            out.append(sym)
    return out
