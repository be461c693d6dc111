"""Wilder's RSI and trade counting on hand-made series."""
from __future__ import annotations

import pytest
from obai_demo.backtest import simulate, wilder_rsi


def test_rsi_hand_computed():
    # period 3; changes: +1, -2, +3, +1, -1
    closes = [10, 11, 9, 12, 13, 12]
    rsi = wilder_rsi(closes, 3)
    assert rsi[:3] == [None, None, None]
    # first averages: gain (1+0+3)/3 = 4/3, loss (0+2+0)/3 = 2/3 -> RS 2 -> 66.67
    assert rsi[3] == pytest.approx(100 - 100 / 3)
    # +1: gain (4/3*2 + 1)/3 = 11/9, loss (2/3*2)/3 = 4/9 -> RS 11/4 -> 73.33
    assert rsi[4] == pytest.approx(100 - 100 / (1 + 11 / 4))
    # -1: gain (11/9*2)/3 = 22/27, loss (4/9*2 + 1)/3 = 17/27 -> RS 22/17
    assert rsi[5] == pytest.approx(100 - 100 / (1 + 22 / 17))


def test_rsi_edge_cases():
    assert wilder_rsi([1, 2], 14) == [None, None]
    assert wilder_rsi([1, 2, 3, 4], 2)[2:] == [100.0, 100.0]
    assert wilder_rsi([5, 5, 5], 2)[2] == 50.0


def test_trade_counting_signal_exits_and_end_of_data():
    closes = [100, 90, 95, 110, 100, 80, 85]
    rsi = [None, 25, 50, 75, 50, 20, 40]
    result = simulate(closes, rsi, lower=30, upper=70)
    # buy at 90 (rsi 25), sell at 110 (rsi 75); buy at 80 (rsi 20), closed at the end at 85
    assert [(t.entry_index, t.exit_index, t.exit_reason) for t in result.trades] == [(1, 3, "signal"), (5, 6, "end")]
    assert result.total_trades == 2 and result.winning_trades == 2
    assert result.total_return_pct == pytest.approx(((110 / 90) * (85 / 80) - 1) * 100)


def test_stop_loss_on_closes():
    closes = [100, 100, 98, 97, 120]
    rsi = [20, 50, 50, 50, 80]
    result = simulate(closes, rsi, lower=30, upper=70, stop_pct=1.5)
    # entry 100; 98 is a 2% drop, past the 1.5% stop
    assert [(t.exit_index, t.exit_reason) for t in result.trades] == [(2, "stop")]
    assert result.winning_trades == 0 and result.win_rate_pct == 0.0


def test_no_signal_no_trade():
    result = simulate([1, 2, 3], [None, 50, 50], 30, 70)
    assert result.total_trades == 0 and result.total_return_pct == 0.0
