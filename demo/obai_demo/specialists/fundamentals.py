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


PEERS_TITLE = "P/E of the {n} covered tickers"


def peer_pe(table: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The P/E spread of every covered ticker: the yardstick for a valuation question."""
    ordered = sorted(table.values(), key=lambda r: (r["pe"], r["ticker"]))
    values = [r["pe"] for r in ordered]
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    low, high = ordered[0], ordered[-1]
    text = (f"{PEERS_TITLE.format(n=len(values))}: median {fmt('pe', median)}, "
            f"lowest {fmt('pe', low['pe'])} ({low['ticker']}), highest {fmt('pe', high['pe'])} ({high['ticker']})")
    structured = {"count": len(values), "median": round(median, 2), "lowest": {"ticker": low["ticker"], "pe": low["pe"]},
                  "highest": {"ticker": high["ticker"], "pe": high["pe"]}}
    return text, structured


def rows(tickers: list[str], peers: bool = False) -> dict[str, Any]:
    table = bundle.fundamentals()
    selected = [table[t] for t in tickers]
    blocks = [render_row(r) for r in selected]
    structured: dict[str, Any] = {"rows": selected}
    if peers:
        text, structured["peer_pe"] = peer_pe(table)
        blocks.append(text)
    return envelope("\n\n".join(blocks), structured)


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
            descending: bool = True, peers: bool = False) -> dict[str, Any]:
    """A ranking, or the rows of ``tickers``; ``peers`` adds every covered ticker's P/E spread."""
    if rank_by:
        return ranking(rank_by, top_n or 3, descending)
    return rows(tickers, peers)
