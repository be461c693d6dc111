"""Generate the bundled data in ``obai_demo/data/`` from a fixed seed.

Run ``python -m obai_demo.datagen`` to rewrite the files; the output is byte-identical on
every run, which a test checks. Prices are a geometric random walk pulled back towards a
drifting trend with two slow cycles on it; the cycles make RSI(14) swing through 30 and
70 several times per ticker, so threshold backtests have trades to count.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import random
from pathlib import Path

from .universe import TICKERS

SEED = 20260430
TRADING_DAYS = 500
LAST_DAY = dt.date(2026, 4, 30)
DATA_DIR = Path(__file__).parent / "data"

# ticker: (start price, annual drift, daily volatility, mean volume)
PRICE_MODEL: dict[str, tuple[float, float, float, int]] = {
    "AAPL": (185.0, 0.10, 0.017, 55_000_000),
    "MSFT": (410.0, 0.12, 0.015, 21_000_000),
    "NVDA": (95.0, 0.20, 0.030, 250_000_000),
    "TSLA": (180.0, 0.05, 0.035, 95_000_000),
    "AMZN": (175.0, 0.14, 0.020, 40_000_000),
    "JPM": (195.0, 0.09, 0.014, 9_000_000),
    "XOM": (115.0, 0.02, 0.016, 15_000_000),
    "KO": (62.0, 0.04, 0.010, 13_000_000),
}
MEAN_REVERSION = 0.2
CYCLE_AMPLITUDE = 5.0  # in units of the ticker's daily volatility
CYCLE_DAYS = (40.0, 80.0)

# ticker: (sector, revenue_bn, net_income_bn, pe, eps, debt_to_equity, dividend_yield_pct)
FUNDAMENTALS: dict[str, tuple[str, float, float, float, float, float, float]] = {
    "AAPL": ("Technology", 391.0, 93.7, 29.8, 6.08, 1.87, 0.52),
    "MSFT": ("Technology", 245.1, 88.1, 34.2, 11.80, 0.29, 0.78),
    "NVDA": ("Semiconductors", 130.5, 72.9, 45.3, 2.94, 0.13, 0.03),
    "TSLA": ("Automotive", 97.7, 7.1, 98.6, 2.04, 0.19, 0.00),
    "AMZN": ("Consumer Discretionary", 638.0, 59.2, 35.1, 5.53, 0.54, 0.00),
    "JPM": ("Financials", 177.6, 58.5, 12.4, 19.75, 1.27, 2.05),
    "XOM": ("Energy", 339.2, 33.7, 14.1, 7.84, 0.16, 3.45),
    "KO": ("Consumer Staples", 47.1, 10.6, 25.3, 2.46, 1.63, 2.85),
}

# slug: (question, yes_price, volume_usd, end_date, keywords)
PREDICTION_MARKETS: dict[str, tuple[str, float, int, str, list[str]]] = {
    "fed-cuts-rates-december-2026": (
        "Will the Fed cut interest rates at its December 2026 meeting?",
        0.63, 48_213_560, "2026-12-16",
        ["fed", "federal reserve", "rate cut", "cut rates", "cuts rates", "interest rate", "interest rates", "fomc", "december"],
    ),
    "us-recession-2026": (
        "Will the US economy enter a recession in 2026?",
        0.27, 21_904_115, "2026-12-31",
        ["recession", "economy", "gdp", "downturn"],
    ),
    "us-recession-2027": (
        "Will the US economy enter a recession in 2027?",
        0.31, 9_406_215, "2027-12-31",
        ["recession", "economy", "gdp", "downturn", "2027"],
    ),
    "bitcoin-above-150k-2026": (
        "Will Bitcoin trade above $150,000 by December 31, 2026?",
        0.34, 67_552_980, "2026-12-31",
        ["bitcoin", "btc", "crypto", "cryptocurrency"],
    ),
    "nvidia-largest-company-end-of-2026": (
        "Will Nvidia be the world's largest company by market cap at the end of 2026?",
        0.58, 12_480_300, "2026-12-31",
        ["nvidia", "nvda", "market cap", "largest company"],
    ),
    "us-cpi-above-3pct-december-2026": (
        "Will US CPI inflation be above 3% year over year in December 2026?",
        0.22, 8_731_442, "2027-01-13",
        ["inflation", "cpi", "prices"],
    ),
    "us-cpi-above-3pct-december-2027": (
        "Will US CPI inflation be above 3% year over year in December 2027?",
        0.18, 3_912_870, "2028-01-12",
        ["inflation", "cpi", "prices", "2027"],
    ),
    "tesla-robotaxi-10-cities-2026": (
        "Will Tesla run a paid robotaxi service in 10 US cities by the end of 2026?",
        0.19, 5_118_770, "2026-12-31",
        ["tesla", "tsla", "robotaxi", "self-driving"],
    ),
    "sp500-above-7000-end-of-2026": (
        "Will the S&P 500 close above 7,000 on December 31, 2026?",
        0.55, 30_066_210, "2026-12-31",
        ["s&p", "s&p 500", "sp500", "index", "stock market", "stocks"],
    ),
    "wti-oil-above-100-2026": (
        "Will WTI crude oil trade above $100 a barrel in 2026?",
        0.12, 9_874_005, "2026-12-31",
        ["oil", "crude", "wti", "exxon", "xom", "energy"],
    ),
    "apple-foldable-iphone-2026": (
        "Will Apple announce a foldable iPhone in 2026?",
        0.41, 6_320_880, "2026-12-31",
        ["apple", "aapl", "iphone", "foldable"],
    ),
    "ecb-cuts-rates-june-2026": (
        "Will the ECB cut its deposit rate at the June 2026 meeting?",
        0.46, 4_402_615, "2026-06-11",
        ["ecb", "european central bank", "europe", "euro"],
    ),
}


def trading_days(last: dt.date, count: int) -> list[dt.date]:
    """The ``count`` weekdays ending at ``last``, oldest first (no holiday calendar)."""
    days: list[dt.date] = []
    day = last
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day)
        day -= dt.timedelta(days=1)
    return days[::-1]


def price_rows(rng: random.Random) -> list[tuple[str, str, str, int]]:
    """(date, ticker, close, volume) rows, grouped by ticker, oldest first."""
    dates = trading_days(LAST_DAY, TRADING_DAYS)
    rows: list[tuple[str, str, str, int]] = []
    for ticker in TICKERS:
        start, drift, vol, mean_volume = PRICE_MODEL[ticker]
        low, high = CYCLE_DAYS
        fast, slow = rng.uniform(low, high), rng.uniform(2 * low, 3 * high)
        fast_phase, slow_phase = rng.uniform(0, 2 * math.pi), rng.uniform(0, 2 * math.pi)
        amplitude = CYCLE_AMPLITUDE * vol
        log_price = math.log(start)
        trend = log_price
        for i, day in enumerate(dates):
            trend += drift / 252
            target = (
                trend
                + amplitude * math.sin(2 * math.pi * i / fast + fast_phase)
                + 0.6 * amplitude * math.sin(2 * math.pi * i / slow + slow_phase)
            )
            shock = rng.gauss(0.0, vol)
            log_price += MEAN_REVERSION * (target - log_price) + shock
            volume = int(mean_volume * math.exp(rng.gauss(0.0, 0.25) + 8 * abs(shock)))
            rows.append((day.isoformat(), ticker, f"{math.exp(log_price):.2f}", volume))
    return rows


def prices_csv(rng: random.Random) -> str:
    lines = ["date,ticker,close,volume"]
    lines += [f"{d},{t},{c},{v}" for d, t, c, v in price_rows(rng)]
    return "\n".join(lines) + "\n"


def fundamentals_json() -> str:
    table = {}
    for ticker, (sector, revenue, income, pe, eps, de, dy) in FUNDAMENTALS.items():
        table[ticker] = {
            "ticker": ticker,
            "name": TICKERS[ticker],
            "sector": sector,
            "revenue_bn": revenue,
            "net_income_bn": income,
            "net_margin_pct": round(income / revenue * 100, 2),
            "pe": pe,
            "eps": eps,
            "debt_to_equity": de,
            "dividend_yield_pct": dy,
        }
    return json.dumps(table, indent=2, sort_keys=True) + "\n"


def condition_id(slug: str) -> str:
    """A stable Polymarket-style condition id: 0x + the slug's SHA-256."""
    return "0x" + hashlib.sha256(slug.encode("utf-8")).hexdigest()


def markets_json() -> str:
    markets = []
    for slug, (question, yes, volume, end, keywords) in PREDICTION_MARKETS.items():
        markets.append({
            "slug": slug,
            "condition_id": condition_id(slug),
            "question": question,
            "yes_price": yes,
            "volume_usd": volume,
            "end_date": end,
            "keywords": keywords,
        })
    return json.dumps(markets, indent=2, sort_keys=True) + "\n"


def generate() -> dict[str, str]:
    """File name -> content of every bundled data file."""
    rng = random.Random(SEED)
    return {
        "prices.csv": prices_csv(rng),
        "fundamentals.json": fundamentals_json(),
        "prediction_markets.json": markets_json(),
    }


def write(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in generate().items():
        path = out_dir / name
        path.write_bytes(content.encode("utf-8"))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the obai-demo bundled data.")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output directory")
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
