"""market_data_analysis: last close, daily change, 52-week range, volume, moving averages."""
from __future__ import annotations

from typing import Any

from .. import bundle
from ..universe import TICKERS
from . import envelope

WEEKS_52 = 252
VOLUME_DAYS = 30
MOVING_AVERAGES = (50, 200)


def quote(ticker: str, moving_averages: bool = False) -> dict[str, Any]:
    """The figures of one ticker (prices rounded to cents, percentages to 0.01)."""
    series = bundle.prices()[ticker]
    closes, dates = series.closes, series.dates
    year = range(max(0, len(closes) - WEEKS_52), len(closes))
    high = max(year, key=lambda i: closes[i])
    low = min(year, key=lambda i: closes[i])
    volumes = series.volumes[-VOLUME_DAYS:]
    figures: dict[str, Any] = {
        "ticker": ticker,
        "name": TICKERS[ticker],
        "last_close": closes[-1],
        "date": dates[-1],
        "change_pct": round((closes[-1] / closes[-2] - 1) * 100, 2),
        "high_52w": closes[high],
        "high_52w_date": dates[high],
        "low_52w": closes[low],
        "low_52w_date": dates[low],
        "avg_volume_30d": round(sum(volumes) / len(volumes)),
    }
    if moving_averages:
        for days in MOVING_AVERAGES:
            window = closes[-days:]
            figures[f"sma_{days}"] = round(sum(window) / len(window), 2)
    return figures


def render(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['ticker']} ({figures['name']})",
        f"Last close: {figures['last_close']:.2f} on {figures['date']}",
        f"1-day change: {figures['change_pct']:+.2f}%",
        f"52-week high: {figures['high_52w']:.2f} on {figures['high_52w_date']}",
        f"52-week low: {figures['low_52w']:.2f} on {figures['low_52w_date']}",
        f"30-day average volume: {figures['avg_volume_30d']:,}",
    ]
    for days in MOVING_AVERAGES:
        if f"sma_{days}" in figures:
            lines.append(f"{days}-day moving average: {figures[f'sma_{days}']:.2f}")
    return "\n".join(lines)


def analyse(tickers: list[str], moving_averages: bool = False) -> dict[str, Any]:
    quotes = [quote(t, moving_averages) for t in tickers]
    text = "\n\n".join(render(q) for q in quotes)
    return envelope(text, {"quotes": quotes})
