"""fundamentals_analysis: table rows for named tickers, or a ranking over all tickers."""
from __future__ import annotations

from typing import Any

from .. import bundle
from . import envelope

# metric key -> (label, format)
METRICS: dict[str, tuple[str, str]] = {
    "revenue_bn": ("revenue", "${:.1f}bn"),
    "net_income_bn": ("net income", "${:.1f}bn"),
    "net_margin_pct": ("net margin", "{:.2f}%"),
    "pe": ("P/E", "{:.1f}"),
    "eps": ("EPS", "{:.2f}"),
    "debt_to_equity": ("debt to equity", "{:.2f}"),
    "dividend_yield_pct": ("dividend yield", "{:.2f}%"),
}


def fmt(metric: str, value: float) -> str:
    return METRICS[metric][1].format(value)


def label(metric: str) -> str:
    return METRICS[metric][0]


def render_row(row: dict[str, Any]) -> str:
    lines = [f"{row['ticker']} ({row['name']}), sector {row['sector']}"]
    for metric in METRICS:
        text = label(metric)
        lines.append(f"{text[0].upper()}{text[1:]}: {fmt(metric, row[metric])}")
    return "\n".join(lines)


def rows(tickers: list[str]) -> dict[str, Any]:
    table = bundle.fundamentals()
    selected = [table[t] for t in tickers]
    return envelope("\n\n".join(render_row(r) for r in selected), {"rows": selected})


def ranking(metric: str, top_n: int, descending: bool = True) -> dict[str, Any]:
    table = bundle.fundamentals()
    ordered = sorted(table.values(), key=lambda r: (r[metric], r["ticker"]), reverse=descending)
    top = ordered[: max(1, min(top_n, len(ordered)))]
    direction = "highest" if descending else "lowest"
    lines = [f"Top {len(top)} by {label(metric)}, {direction} first (of {len(table)} covered tickers):"]
    for rank, row in enumerate(top, start=1):
        lines.append(f"{rank}. {row['ticker']} ({row['name']}): {label(metric)} {fmt(metric, row[metric])}")
    structured = {
        "rank_by": metric,
        "order": "descending" if descending else "ascending",
        "ranking": [{"rank": i, "ticker": r["ticker"], "name": r["name"], metric: r[metric]} for i, r in enumerate(top, 1)],
    }
    return envelope("\n".join(lines), structured)


def analyse(tickers: list[str], rank_by: str | None = None, top_n: int | None = None,
            descending: bool = True) -> dict[str, Any]:
    if rank_by:
        return ranking(rank_by, top_n or 3, descending)
    return rows(tickers)
