"""strategy_analysis: RSI threshold backtests, run now or queued as a background job.

The result text is the contract the harness checks: the operator list, ``Total trades``,
``Win rate``, ``Total return`` and ``Verdict`` lines.
"""
from __future__ import annotations

from typing import Any

from .. import bundle
from ..backtest import BacktestResult, simulate, wilder_rsi
from ..jobs import Job, JobBook
from ..strategy_spec import StrategySpec, parse_spec, plain
from . import envelope


def operators(spec: StrategySpec) -> str:
    rsi = f"RSI({spec.period})"
    parts = [f"BUY if {rsi} < {plain(spec.lower)}", f"SELL if {rsi} > {plain(spec.upper)}"]
    if spec.stop_pct is not None:
        parts.append(f"STOP {plain(spec.stop_pct)}%")
    return "; ".join(parts)


def run_backtest(spec: StrategySpec, no_signals: bool = False) -> dict[str, BacktestResult]:
    """One result per ticker; ``no_signals`` simulates a strategy that never triggers."""
    results = {}
    for ticker in spec.tickers:
        closes = bundle.prices()[ticker].closes
        rsi = wilder_rsi(closes, spec.period)
        if no_signals:
            rsi = [None] * len(closes)
        stop = float(spec.stop_pct) if spec.stop_pct is not None else None
        results[ticker] = simulate(closes, rsi, float(spec.lower), float(spec.upper), stop)
    return results


def verdict(total_trades: int, total_return_pct: float) -> str:
    if total_trades == 0:
        return "NO TRADES"
    return "PROFITABLE" if total_return_pct > 0 else "UNPROFITABLE"


def report(spec: StrategySpec, results: dict[str, BacktestResult],
           omit_total_trades: bool = False) -> tuple[str, dict[str, Any]]:
    """The contract text and its structured twin."""
    series = bundle.prices()[spec.tickers[0]]
    trades = sum(r.total_trades for r in results.values())
    wins = sum(r.winning_trades for r in results.values())
    win_rate = 100.0 * wins / trades if trades else 0.0
    total_return = sum(r.total_return_pct for r in results.values()) / len(results)
    outcome = verdict(trades, total_return)

    lines = [
        f"Backtest {', '.join(spec.tickers)} on daily closes, {series.dates[0]} to "
        f"{series.dates[-1]} ({len(series.dates)} bars)",
        f"Operators: {operators(spec)}",
    ]
    if spec.full_history:
        lines.append(f"History: full history requested; all {len(series.dates)} daily bars available were used, "
                     f"{series.dates[0]} to {series.dates[-1]}; nothing older is available")
    if spec.entry_time:
        lines.append(f"Entry time: {spec.entry_time} requested, not applied: the data has daily closes only, "
                     "so each entry fills at that day's close")
    if len(results) > 1:
        for ticker, r in results.items():
            lines.append(f"{ticker}: {r.total_trades} trades, win rate {r.win_rate_pct:.1f}%, "
                         f"return {r.total_return_pct:.2f}%")
    if not omit_total_trades:
        lines.append(f"Total trades: {trades}")
    lines += [
        f"Winning trades: {wins}",
        f"Win rate: {win_rate:.1f}%",
        f"Total return: {total_return:.2f}%" + (" (equal-weight average)" if len(results) > 1 else ""),
        f"Verdict: {outcome}",
    ]
    structured = {
        "status": "done",
        "tickers": list(spec.tickers),
        "operators": operators(spec),
        "rsi_period": spec.period,
        "buy_below": float(spec.lower),
        "sell_above": float(spec.upper),
        "stop_loss_pct": float(spec.stop_pct) if spec.stop_pct is not None else None,
        "entry_time": spec.entry_time,
        "total_trades": trades,
        "winning_trades": wins,
        "win_rate_pct": round(win_rate, 1),
        "total_return_pct": round(total_return, 2),
        "verdict": outcome,
        "per_ticker": {
            t: {"trades": r.total_trades, "win_rate_pct": round(r.win_rate_pct, 1),
                "total_return_pct": round(r.total_return_pct, 2)}
            for t, r in results.items()
        },
    }
    if omit_total_trades:
        del structured["total_trades"]
    return "\n".join(lines), structured


def analyse(spec_text: str, book: JobBook, *, no_signals: bool = False,
            omit_total_trades: bool = False) -> dict[str, Any]:
    """Backtest now, or queue a job when the instruction says to run in the background."""
    spec = parse_spec(spec_text)
    if spec.background:
        job = book.submit(spec_text)
        text = (f"Backtest queued. Job ID: {job.job_id}. Status: queued. "
                f"ETA: {job.eta_seconds} seconds.")
        return envelope(text, {"job_id": job.job_id, "status": "queued", "eta_seconds": job.eta_seconds})
    text, structured = report(spec, run_backtest(spec, no_signals), omit_total_trades)
    return envelope(text, structured)


def follow_up(job: Job, now: float, *, no_signals: bool = False,
              omit_total_trades: bool = False) -> dict[str, Any]:
    """The state of a queued job: still running with an ETA, or its full result."""
    remaining = job.remaining(now)
    if remaining > 0:
        text = f"Job {job.job_id} is still running. ETA: {remaining} seconds."
        return envelope(text, {"job_id": job.job_id, "status": "running", "eta_seconds": remaining})
    spec = parse_spec(job.spec)
    text, structured = report(spec, run_backtest(spec, no_signals), omit_total_trades)
    return envelope(f"Job {job.job_id} finished.\n{text}", {"job_id": job.job_id, **structured})
