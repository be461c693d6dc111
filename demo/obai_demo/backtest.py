"""Wilder's RSI and a long-only threshold backtest on daily closes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


def wilder_rsi(closes: Sequence[float], period: int = 14) -> list[float | None]:
    """RSI per bar (None until ``period`` changes are known), Wilder's smoothing."""
    if period < 1:
        raise ValueError("RSI period must be at least 1")
    rsi: list[float | None] = [None] * len(closes)
    if len(closes) <= period:
        return rsi
    changes = [closes[i] - closes[i - 1] for i in range(1, len(closes))]
    avg_gain = sum(max(c, 0.0) for c in changes[:period]) / period
    avg_loss = sum(max(-c, 0.0) for c in changes[:period]) / period
    rsi[period] = _rsi(avg_gain, avg_loss)
    for i in range(period + 1, len(closes)):
        change = changes[i - 1]
        avg_gain = (avg_gain * (period - 1) + max(change, 0.0)) / period
        avg_loss = (avg_loss * (period - 1) + max(-change, 0.0)) / period
        rsi[i] = _rsi(avg_gain, avg_loss)
    return rsi


def _rsi(avg_gain: float, avg_loss: float) -> float:
    if avg_loss == 0:
        return 100.0 if avg_gain > 0 else 50.0
    return 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)


@dataclass(frozen=True)
class Trade:
    """One round trip: bar indexes, prices and why it was closed."""

    entry_index: int
    exit_index: int
    entry_price: float
    exit_price: float
    exit_reason: str  # "signal", "stop" or "end"

    @property
    def ret(self) -> float:
        return self.exit_price / self.entry_price - 1.0


@dataclass(frozen=True)
class BacktestResult:
    """Trades of one series and their summary figures."""

    trades: list[Trade]

    @property
    def total_trades(self) -> int:
        return len(self.trades)

    @property
    def winning_trades(self) -> int:
        return sum(1 for t in self.trades if t.ret > 0)

    @property
    def win_rate_pct(self) -> float:
        return 100.0 * self.winning_trades / self.total_trades if self.trades else 0.0

    @property
    def total_return_pct(self) -> float:
        growth = 1.0
        for trade in self.trades:
            growth *= 1.0 + trade.ret
        return (growth - 1.0) * 100.0


def simulate(
    closes: Sequence[float],
    rsi: Sequence[float | None],
    lower: float,
    upper: float,
    stop_pct: float | None = None,
) -> BacktestResult:
    """Buy at the close when RSI < lower while flat; sell when RSI > upper or the stop hits.

    The stop is checked on closes (daily data has no intraday path). A position still
    open on the last bar is closed there.
    """
    trades: list[Trade] = []
    entry: int | None = None
    for i, value in enumerate(rsi):
        if value is None:
            continue
        if entry is None:
            if value < lower:
                entry = i
            continue
        stop_hit = stop_pct is not None and closes[i] <= closes[entry] * (1 - stop_pct / 100)
        if stop_hit or value > upper:
            trades.append(Trade(entry, i, closes[entry], closes[i], "stop" if stop_hit else "signal"))
            entry = None
    if entry is not None and entry < len(closes) - 1:
        last = len(closes) - 1
        trades.append(Trade(entry, last, closes[entry], closes[last], "end"))
    return BacktestResult(trades)
