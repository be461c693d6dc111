"""Option payoff maths, checked against values worked out by hand."""
from __future__ import annotations

from decimal import Decimal

import pytest
from obai_demo.specialists import options


def analyse(request: str, ticker: str | None = None, wrong: bool = False) -> tuple[str, dict]:
    env = options.analyse(request, ticker, wrong)
    return env["content"][0]["text"], env["structuredContent"]


def test_naked_short_call():
    # premium 4.50 x 100 = 450 max profit; loss unbounded above; breakeven 200 + 4.50
    text, data = analyse("Sell a naked call on AAPL, strike 200, premium 4.50", "AAPL")
    assert "Max profit: $450.00 (capped)" in text
    assert "Max loss: unlimited" in text
    assert "Breakeven: 204.50" in text
    assert data["structure"] == "short_call" and data["max_loss"] == "unlimited"


def test_iron_condor():
    # breakevens 190 - 3.20 and 210 + 3.20; max loss (10 - 3.20) x 100 = 680; max profit 320
    text, data = analyse("iron condor 180/190/210/220 for a 3.20 credit")
    assert "Breakevens: 186.80 and 213.20" in text
    assert "Max loss: $680.00 (capped)" in text
    assert "Max profit: $320.00 (capped)" in text
    assert data["breakevens"] == [186.8, 213.2]


def test_iron_condor_uneven_wings_use_the_wider_one():
    # put wing 5, call wing 10: worst case (10 - 2) x 100 = 800
    text, _ = analyse("iron condor 185/190/210/220 for a 2 credit")
    assert "Max loss: $800.00 (capped)" in text


def test_long_straddle():
    # 250 -/+ 18.40; max loss 1,840
    text, _ = analyse("I bought a long straddle on TSLA at strike 250 for 18.40 in total premium")
    assert "Breakevens: 231.60 and 268.40" in text
    assert "Max loss: $1,840.00 (capped)" in text
    assert "Max profit: unlimited" in text


def test_long_call_and_contract_count():
    # 2 contracts: max loss 6.10 x 200 = 1,220; breakeven 126.10
    text, _ = analyse("buy a call on NVDA strike 120, premium 6.10, 2 contracts", "NVDA")
    assert "Max loss: $1,220.00 (capped)" in text and "Max profit: unlimited" in text
    assert "Breakeven: 126.10" in text and "2 contracts" in text


def test_bull_call_spread():
    # width 10, debit 4: max profit 600, max loss 400, breakeven 124
    text, _ = analyse("Bull call spread on NVDA 120/130 for a 4.00 debit")
    assert "Max profit: $600.00 (capped)" in text
    assert "Max loss: $400.00 (capped)" in text
    assert "Breakeven: 124.00" in text


def test_puts():
    text, _ = analyse("sell a put, strike 50, premium 2")
    assert "Max loss: $4,800.00 (capped)" in text and "Breakeven: 48.00" in text
    text, _ = analyse("buy a put, strike 50, premium 2")
    assert "Max profit: $4,800.00 (capped)" in text and "Max loss: $200.00 (capped)" in text


def test_decimal_arithmetic_is_exact():
    # 0.1 + 0.2 style float drift would show up as 100.30000000000001
    pos = options.evaluate(options.parse("buy a call strike 100.1 premium 0.2"))
    assert pos.breakevens == [Decimal("100.3")]


def test_wrong_math_fault():
    text, _ = analyse("Sell a naked call on AAPL, strike 200, premium 4.50", "AAPL", wrong=True)
    assert "unlimited" not in text and "Max loss: $20,000.00" in text
    text, _ = analyse("iron condor 180/190/210/220 for a 3.20 credit", wrong=True)
    assert "Breakeven: 186.80" in text and "213.20" not in text


@pytest.mark.parametrize("request_text", ["what is an option?", "iron condor please", "a straddle"])
def test_unparseable_position_has_no_numbers(request_text):
    text, data = analyse(request_text)
    assert data == {"structure": None}
    assert not any(ch.isdigit() for ch in text)
