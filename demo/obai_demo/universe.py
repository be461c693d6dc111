"""The tickers the demo covers and the company names that refer to them."""
from __future__ import annotations

# Ticker -> short company name, in the order listings and "all tickers" runs use.
TICKERS: dict[str, str] = {
    "AAPL": "Apple",
    "MSFT": "Microsoft",
    "NVDA": "Nvidia",
    "TSLA": "Tesla",
    "AMZN": "Amazon",
    "JPM": "JPMorgan",
    "XOM": "Exxon",
    "KO": "Coca-Cola",
}

# Lower-case names (and common variants) that mean a ticker.
COMPANY_ALIASES: dict[str, str] = {
    "apple": "AAPL",
    "microsoft": "MSFT",
    "nvidia": "NVDA",
    "tesla": "TSLA",
    "amazon": "AMZN",
    "jpmorgan": "JPM",
    "jp morgan": "JPM",
    "exxon": "XOM",
    "exxonmobil": "XOM",
    "exxon mobil": "XOM",
    "coca-cola": "KO",
    "coca cola": "KO",
    "coke": "KO",
}

DEFAULT_TICKER = "AAPL"
