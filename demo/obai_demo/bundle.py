"""Read the bundled data files (written by :mod:`obai_demo.datagen`)."""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Series:
    """Daily bars of one ticker, oldest first; closes keep their two-decimal text."""

    ticker: str
    dates: tuple[str, ...]
    closes: tuple[float, ...]
    volumes: tuple[int, ...]


@lru_cache(maxsize=None)
def prices() -> dict[str, Series]:
    columns: dict[str, tuple[list[str], list[float], list[int]]] = {}
    with open(DATA_DIR / "prices.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            dates, closes, volumes = columns.setdefault(row["ticker"], ([], [], []))
            dates.append(row["date"])
            closes.append(float(row["close"]))
            volumes.append(int(row["volume"]))
    return {
        ticker: Series(ticker, tuple(d), tuple(c), tuple(v)) for ticker, (d, c, v) in columns.items()
    }


@lru_cache(maxsize=None)
def fundamentals() -> dict[str, dict]:
    return json.loads((DATA_DIR / "fundamentals.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def prediction_markets() -> list[dict]:
    return json.loads((DATA_DIR / "prediction_markets.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def as_of() -> str:
    """The last day of the bundled prices (YYYY-MM-DD): the demo's "today" for relative dates."""
    return max(series.dates[-1] for series in prices().values())
