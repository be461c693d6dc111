"""The hub-to-strategy instruction (writing and parsing) and the strategy contract."""
from __future__ import annotations

import re
from decimal import Decimal

import pytest
from obai_demo.jobs import JobBook
from obai_demo.specialists import strategy
from obai_demo.strategy_spec import parse_spec, write_spec

QUERY = "Backtest AAPL: buy when RSI(14) drops below 30, sell when it rises above 70, 1.5% stop loss, enter at 9:45"
SPEC = "Backtest AAPL on daily closes: BUY when RSI(14) < 30; SELL when RSI(14) > 70; stop loss 1.5%; entry time 9:45"


def test_spec_restates_the_users_numbers():
    assert write_spec(QUERY) == SPEC


@pytest.mark.parametrize("query, spec", [
    ("Backtest AAPL: buy when RSI(14) drops below 30, sell when it rises above 70.",
     "Backtest AAPL on daily closes: BUY when RSI(14) < 30; SELL when RSI(14) > 70"),
    ("Run an RSI(7) backtest on TSLA: buy below 25, sell above 75.",
     "Backtest TSLA on daily closes: BUY when RSI(7) < 25; SELL when RSI(7) > 75"),
    ("Backtest RSI(21) on KO, buying below 35 and selling above 65 with a 2% stop loss.",
     "Backtest KO on daily closes: BUY when RSI(21) < 35; SELL when RSI(21) > 65; stop loss 2%"),
    ("Test my strategy on JPM: buy when RSI(14) falls below 30 and sell when it climbs above 70, stop loss 1.5%.",
     "Backtest JPM on daily closes: BUY when RSI(14) < 30; SELL when RSI(14) > 70; stop loss 1.5%"),
    ("Backtest MSFT with RSI below 30.0 and above 70.5",
     "Backtest MSFT on daily closes: BUY when RSI(14) < 30.0; SELL when RSI(14) > 70.5"),
    ("Backtest a strategy", "Backtest AAPL on daily closes: BUY when RSI(14) < 30; SELL when RSI(14) > 70"),
    ("Backtest RSI(14) below 30 and above 70 across all tickers in the background.",
     "Backtest AAPL, MSFT, NVDA, TSLA, AMZN, JPM, XOM, KO on daily closes: BUY when RSI(14) < 30; "
     "SELL when RSI(14) > 70; run in background"),
])
def test_spec_examples(query, spec):
    assert write_spec(query) == spec


def test_paraphrase_changes_words_not_values():
    para = write_spec(QUERY, paraphrase=True)
    assert para == ("Backtest AAPL on daily closes: BUY when RSI 14 < 30.0; SELL when RSI 14 > 70.0; "
                    "stop loss 1.5%; entry time 9:45")
    assert parse_spec(para) == parse_spec(SPEC)


def test_parse_spec():
    spec = parse_spec(SPEC)
    assert spec.tickers == ("AAPL",) and spec.period == 14
    assert (spec.lower, spec.upper, spec.stop_pct) == (Decimal(30), Decimal(70), Decimal("1.5"))
    assert spec.entry_time == "9:45" and not spec.background


@pytest.mark.parametrize("clause", ["BUY when RSI(14) < 30", "BUY when RSI(14) below 30", "BUY 30", "BUY < 30.0"])
def test_parse_accepts_threshold_forms(clause):
    assert parse_spec(f"Backtest KO on daily closes: {clause}; SELL above 70").lower == Decimal(30)


def test_contract_lines(tmp_path):
    env = strategy.analyse(SPEC, JobBook(tmp_path, "s", "q", 20))
    text = env["content"][0]["text"]
    assert "Operators: BUY if RSI(14) < 30; SELL if RSI(14) > 70; STOP 1.5%" in text
    for line in ("Total trades: ", "Win rate: ", "Total return: ", "Verdict: "):
        assert re.search(rf"(?m)^{line}\S", text)
    assert env["structuredContent"]["total_trades"] > 0
    assert env["isError"] is False


def test_zero_trades_and_broken_contract(tmp_path):
    book = JobBook(tmp_path, "s", "q", 20)
    zero = strategy.analyse(SPEC, book, no_signals=True)["content"][0]["text"]
    assert "Total trades: 0" in zero and "Verdict: NO TRADES" in zero
    broken = strategy.analyse(SPEC, book, omit_total_trades=True)["content"][0]["text"]
    assert "Total trades" not in broken and "Verdict: " in broken and "Operators: " in broken


def test_background_job_queue_and_follow_up(tmp_path):
    book = JobBook(tmp_path, "s1", "query", eta_seconds=20)
    env = strategy.analyse(SPEC + "; run in background", book)
    data = env["structuredContent"]
    assert data["status"] == "queued" and data["eta_seconds"] == 20 and re.fullmatch(r"\d{4}", data["job_id"])
    job = book.get(data["job_id"])
    assert job is not None and job.spec.endswith("run in background")
    running = strategy.follow_up(job, job.created_at + 5)
    assert running["structuredContent"] == {"job_id": job.job_id, "status": "running", "eta_seconds": 15}
    done = strategy.follow_up(job, job.ready_at)["content"][0]["text"]
    assert done.startswith(f"Job {job.job_id} finished.\n") and "Total trades: " in done


def test_job_ids_are_deterministic_and_lost_jobs_are_not_stored(tmp_path):
    a = JobBook(tmp_path, "s1", "q", 20).submit("spec")
    b = JobBook(tmp_path, "s1", "q", 20).submit("spec")
    assert a.job_id == b.job_id and a.created_at == b.created_at
    assert JobBook(tmp_path, "s2", "q", 20).submit("spec").job_id != a.job_id
    lost = JobBook(tmp_path, "s3", "q", 20, keep=False).submit("spec")
    assert JobBook(tmp_path, "s3", "q", 20).get(lost.job_id) is None
