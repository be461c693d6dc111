"""Routing, tickers and the guardrail."""
from __future__ import annotations

import pytest
from obai_demo import routing, skills
from obai_demo.guardrail import classify


@pytest.mark.parametrize("query, expected", [
    ("What is the latest price of AAPL?", ["market_data_analysis"]),
    ("What is AAPL's price and its net margin?", ["market_data_analysis", "fundamentals_analysis"]),
    ("Net margin of AAPL, and its price?", ["fundamentals_analysis", "market_data_analysis"]),
    ("Show MSFT's P/E, then backtest MSFT", ["fundamentals_analysis", "strategy_analysis"]),
    ("Check the TSLA price and the odds of a Fed rate cut", ["market_data_analysis", "prediction_market_analysis"]),
    ("Iron condor 180/190/210/220 for a 3.20 credit", ["options_analysis"]),
    ("Run an RSI(7) backtest on TSLA", ["strategy_analysis"]),
    ("What does Polymarket say about bitcoin?", ["prediction_market_analysis"]),
    ("How is Nvidia trading today? What's the 52-week high?", ["market_data_analysis"]),
    ("What is a bond?", []),
    # Whole words only: "pricing" is not "price", "rsi" is not inside "versions".
    ("Explain option pricing versions", ["options_analysis"]),
])
def test_specialists_in_order_of_first_trigger(query, expected):
    assert routing.specialists(query) == expected


def test_each_specialist_once_even_with_many_triggers():
    assert routing.specialists("price, prices, quote, volume and closing price") == ["market_data_analysis"]


def test_tickers_from_symbols_and_names_in_order():
    assert routing.tickers("Compare Coca-Cola with MSFT and apple's revenue") == ["KO", "MSFT", "AAPL"]
    assert routing.tickers("JP Morgan and Exxon") == ["JPM", "XOM"]
    assert routing.tickers("nothing here") == []
    assert routing.tickers("backtest across all tickers") == ["AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "JPM", "XOM", "KO"]


def test_job_mention():
    assert routing.job_mention("What are the results of job 4821?") == "4821"
    assert routing.job_mention("status of Job #1234") == "1234"
    assert routing.job_mention("a jobless recovery") is None


@pytest.mark.parametrize("query, allowed, category", [
    ("What is the latest price of AAPL?", True, "finance"),
    ("Tell me about Tesla", True, "finance"),
    ("Should I invest in an ETF or in single stocks?", True, "finance"),
    ("What is a bond?", True, "finance"),
    ("Will inflation come down?", True, "finance"),
    ("What are the results of job 4821?", True, "job_followup"),
    ("Write me a poem about cats.", False, "off_topic"),
    ("What's the weather in Paris tomorrow?", False, "off_topic"),
    ("How do I bake sourdough bread?", False, "off_topic"),
    ("Schreib mir ein Gedicht über den Herbst.", False, "off_topic"),
])
def test_guardrail(query, allowed, category):
    decision = classify(query)
    assert (decision.allowed, decision.category) == (allowed, category)
    assert set(decision.as_dict()) == {"allowed", "category", "reason"}


def test_skills_follow_specialist_order():
    assert skills.skills_for(["fundamentals_analysis", "market_data_analysis"]) == ["fundamentals", "market-data"]
    assert skills.load("strategy-backtest") == {"loaded": "strategy-backtest", "tools": ["strategy_analysis"]}
    assert set(skills.SKILL_OF) == set(routing.SPECIALIST_TRIGGERS)
