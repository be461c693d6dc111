"""Whole turns in-process (tracing off): routing, answers, grounding, jobs, faults, flake."""
from __future__ import annotations

import re
import time

import pytest
from obai_demo import compose, grounding
from obai_demo.faults import FAULTS
from obai_demo.guardrail import REFUSAL
from obai_demo.hub import InjectedCrash

PRICE = "What is the latest price of AAPL?"
MULTI = "What is Apple's stock price and its net margin?"
TOP3 = "Which companies have the best margins? Give me the top 3 by net margin."
BACKTEST = "Backtest AAPL: buy when RSI(14) drops below 30, sell when it rises above 70, 1.5% stop loss, enter at 9:45"
ASYNC = "Backtest NVDA with RSI(14) below 30 and above 70 in the background"
PREDICTION = "What are the odds the Fed cuts rates in December 2026?"
NAKED_CALL = "What is my max loss if I sell a naked call on AAPL at strike 200 for a 4.50 premium?"
CONDOR = "Explain the payoff of an iron condor 180/190/210/220 for a 3.20 credit on MSFT."
OFF_TOPIC = "Write me a poem about cats."

GROUNDED_QUERIES = [
    PRICE, MULTI, TOP3, BACKTEST, PREDICTION, NAKED_CALL, CONDOR,
    "Show me the 52-week range and average volume for MSFT.",
    "Give me a quote for TSLA and KO.",
    "What is the closing price and 50-day moving average of AMZN?",
    "Compare revenue and debt for JPM and XOM.",
    "Which 5 companies have the lowest P/E? Show the bottom 5 by valuation.",
    "Run an RSI(7) backtest on TSLA: buy below 25, sell above 75.",
    "Backtest RSI(21) on KO, buying below 35 and selling above 65 with a 2% stop loss.",
    "What does Polymarket say about bitcoin by the end of 2026?",
    "What chance do prediction markets give to inflation above 3% next year?",
    "I bought a long straddle on TSLA at strike 250 for 18.40 in total premium. Where are the breakevens?",
    "Bull call spread on NVDA 120/130 for a 4.00 debit: what are the max profit and max loss?",
    "Give me the price of JPM and the revenue of JPM, then backtest JPM: buy when RSI(14) is below 30, sell above 70.",
    "Check the TSLA price and the odds of a Fed rate cut in December 2026.",
    ASYNC,
]


def test_clean_multi_specialist_turn(run_turn):
    turn = run_turn(MULTI)
    assert turn.exit_code == 0
    assert [e.name for e in turn.events] == [
        "guardrail", "load_skill", "load_skill", "market_data_analysis", "fundamentals_analysis", "compose_answer"]
    assert turn.skills == ["market-data", "fundamentals"]
    market, fundamentals = turn.specialists
    assert market.inputs["tickers"] == ["AAPL"] and market.inputs["request"].startswith("Latest close")
    for event in turn.specialists:
        assert event.output["isError"] is False and event.output["content"][0]["type"] == "text"
        assert event.output["structuredContent"]
    assert "238.41" in turn.answer and "23.96%" in turn.answer


@pytest.mark.parametrize("query", GROUNDED_QUERIES)
def test_every_number_of_the_answer_is_in_a_payload(run_turn, query):
    turn = run_turn(query)
    assert turn.exit_code == 0 and turn.answer
    assert grounding.ungrounded(turn.answer, turn.payload_texts) == []
    # Dates are printed only when a payload prints them.
    for date in re.findall(r"\d{4}-\d{2}-\d{2}", turn.answer):
        assert any(date in p for p in turn.payload_texts)


def test_refusal(run_turn):
    turn = run_turn(OFF_TOPIC)
    assert turn.exit_code == 1 and turn.answer == REFUSAL
    assert [e.name for e in turn.events] == ["guardrail"]
    assert turn.events[0].output == {"allowed": False, "category": "off_topic",
                                     "reason": "no finance or markets topic found"}
    assert not re.search(r"\d|\$|\b[A-Z]{2,5}\b", turn.answer)


@pytest.mark.parametrize("query, says", [
    ("What is a bond?", ("A bond is a loan", "interest", "maturity")),
    ("Should I invest in an ETF or in single stocks?", ("ETF is the better core holding", "Single stocks", "not personal advice")),
])
def test_general_finance_question_is_answered_without_specialists(run_turn, query, says):
    turn = run_turn(query)
    assert turn.exit_code == 0 and turn.answer != compose.GENERIC
    assert all(s in turn.answer for s in says), turn.answer
    assert turn.specialists == [] and turn.skills == []
    assert not re.search(r"\d", turn.answer)


def test_general_question_no_topic_covers_gets_what_can_be_looked_up(run_turn):
    turn = run_turn("Is now a good time to buy crypto?")
    assert turn.exit_code == 0 and turn.answer == compose.GENERIC
    assert turn.specialists == []


def test_strategy_spec_reaches_the_specialist(run_turn):
    turn = run_turn(BACKTEST)
    (event,) = turn.specialists
    assert event.inputs == {"spec": "Backtest AAPL on daily closes: BUY when RSI(14) < 30; "
                                    "SELL when RSI(14) > 70; stop loss 1.5%; entry time 9:45"}
    assert "Operators: BUY if RSI(14) < 30; SELL if RSI(14) > 70; STOP 1.5%" in turn.answer


def test_async_job_and_follow_up(run_turn):
    first = run_turn(ASYNC, session="s9", eta=0)
    m = re.fullmatch(r"Backtest queued\. Job ID: (\d{4})\. ETA: 0 seconds\. Ask about job \1 for the results\.",
                     first.answer)
    assert m, first.answer
    job_id = m.group(1)
    assert (run_turn.home / "sessions" / "s9" / "jobs" / f"{job_id}.json").exists()
    follow = run_turn(f"What are the results of job {job_id}?", session="s9")
    assert follow.exit_code == 0 and follow.skills == ["strategy-backtest"]
    (event,) = follow.specialists
    assert event.inputs == {"job_id": job_id, "spec": first.specialists[0].inputs["spec"]}
    assert "Total trades: " in follow.answer and "Verdict: " in follow.answer
    assert follow.events[0].output["category"] == "job_followup"
    assert grounding.ungrounded(follow.answer, follow.payload_texts) == []


def test_job_still_running(run_turn):
    first = run_turn(ASYNC, session="s8", eta=600)
    job_id = re.search(r"Job ID: (\d+)", first.answer).group(1)
    follow = run_turn(f"results of job {job_id}?", session="s8")
    assert re.fullmatch(rf"Job {job_id} is still running\. ETA: \d+ seconds\.", follow.answer)


def test_unknown_job_exits_4(run_turn):
    first = run_turn(ASYNC, session="s7", eta=0)
    job_id = re.search(r"Job ID: (\d+)", first.answer).group(1)
    other_session = run_turn(f"What are the results of job {job_id}?", session="other")
    assert (other_session.exit_code, other_session.answer) == (4, "")
    assert other_session.specialists == [] and other_session.skills == []
    assert any("unknown job" in n for n in other_session.notes)


def test_delay_is_spent_before_answering(run_turn):
    start = time.monotonic()
    turn = run_turn(PRICE, delay_ms=300)
    assert time.monotonic() - start >= 0.3 and turn.exit_code == 0


# ---------------------------------------------------------------------- faults


def _names(turn):
    return [e.name for e in turn.events]


def _first_error(turn):
    return [e for e in turn.specialists if e.error is not None]


def check_drop_skill(clean, bad):
    assert bad.skills == clean.skills[1:]
    assert bad.specialist_names == clean.specialist_names and bad.answer == clean.answer


def check_extra_skill(clean, bad):
    assert bad.skills == clean.skills + ["options"]
    assert bad.specialist_names == clean.specialist_names and bad.answer == clean.answer


def check_skip_specialist(clean, bad):
    assert bad.specialist_names == clean.specialist_names[:-1] and bad.skills == clean.skills
    assert bad.answer == clean.answer.split("\n\n")[0]


def check_reorder_specialists(clean, bad):
    assert bad.specialist_names == clean.specialist_names[::-1] and bad.answer == clean.answer


def check_extra_specialist(clean, bad):
    assert bad.specialist_names == clean.specialist_names + ["fundamentals_analysis"]
    assert bad.skills == clean.skills and bad.answer == clean.answer


def check_paraphrase_threshold(clean, bad):
    spec = bad.specialists[0].inputs["spec"]
    assert "RSI 14 < 30.0" in spec and "RSI 14 > 70.0" in spec and "RSI(14)" not in spec
    assert bad.specialists[0].output == clean.specialists[0].output and bad.answer == clean.answer


def check_span_error(clean, bad):
    (failed,) = _first_error(bad)
    assert failed.name == clean.specialist_names[0] and failed.output is None
    assert bad.specialist_names == clean.specialist_names
    assert "market data lookup failed" in bad.answer
    assert bad.answer.split("\n\n")[1] == clean.answer.split("\n\n")[1]


def check_empty_payload(clean, bad):
    assert bad.specialists[0].output == {"content": [], "isError": False}
    assert bad.answer.split("\n\n")[0] == (
        "The market data service returned no data, so that part of the answer is unavailable.")
    assert bad.answer.split("\n\n")[1] == clean.answer.split("\n\n")[1]
    assert grounding.ungrounded(bad.answer, bad.payload_texts) == []


def check_tool_error(clean, bad):
    assert bad.specialists[0].output == {"isError": True, "content": [{"type": "text", "text": "upstream timeout"}]}
    assert "upstream timeout" in bad.answer
    assert bad.answer.split("\n\n")[1] == clean.answer.split("\n\n")[1]


def check_broken_contract(clean, bad):
    assert "Total trades" not in bad.specialists[0].output["content"][0]["text"]
    assert "Total trades" not in bad.answer and "Verdict: " in bad.answer


def check_zero_trades(clean, bad):
    assert "Total trades: 0" in bad.answer and "Verdict: NO TRADES" in bad.answer
    assert bad.specialists[0].inputs == clean.specialists[0].inputs


def check_no_job_id(clean, bad):
    assert "Job ID:" not in bad.answer and "check back soon" in bad.answer.lower()
    assert re.search(r"ETA: \d+ seconds", bad.answer)
    assert bad.specialists[0].output == clean.specialists[0].output


def check_lost_job(clean, bad):
    assert bad.answer == clean.answer


def check_no_slug(clean, bad):
    payload = bad.specialists[0].output["structuredContent"]["markets"][0]
    assert payload["slug"] not in bad.answer and payload["condition_id"] not in bad.answer
    assert payload["slug"] in clean.answer
    assert not re.search(r"\b[a-z0-9]+(?:-[a-z0-9]+){2,}\b", bad.answer)


def check_wrong_option_math(clean, bad):
    assert "unlimited" in clean.answer and "unlimited" not in bad.answer.split("max loss")[1]


def check_empty_answer(clean, bad):
    assert bad.answer == "" and bad.exit_code == 0 and _names(bad) == _names(clean)


def check_ungrounded_number(clean, bad):
    assert bad.answer.startswith(clean.answer) and "987.65" in bad.answer
    assert grounding.ungrounded(bad.answer, bad.payload_texts) == ["987.65"]


def check_leaky_guardrail(clean, bad):
    assert bad.answer == clean.answer == REFUSAL and bad.exit_code == 1
    assert bad.specialist_names == ["market_data_analysis"] and bad.skills == []


def check_leaky_response(clean, bad):
    assert bad.answer.startswith(REFUSAL) and "AAPL closed at 238.41" in bad.answer and bad.exit_code == 1
    assert bad.specialists == []


def check_wrong_exit_code(clean, bad):
    assert bad.answer == REFUSAL and (clean.exit_code, bad.exit_code) == (1, 0)


def check_overblock(clean, bad):
    assert clean.exit_code == 0 and clean.specialists
    assert (bad.answer, bad.exit_code) == (REFUSAL, 1) and bad.specialists == [] and bad.skills == []


def check_no_trace(clean, bad):
    assert bad.answer == clean.answer and _names(bad) == _names(clean)


def check_duplicate_trace(clean, bad):
    assert bad.answer == clean.answer and _names(bad) == _names(clean) * 2


IN_PROCESS = {name: globals()[f"check_{name}"] for name in FAULTS if f"check_{name}" in globals()}


def test_every_fault_but_process_ones_is_covered_in_process():
    assert set(FAULTS) - set(IN_PROCESS) == {"hang", "crash"}


@pytest.mark.parametrize("name", sorted(IN_PROCESS))
def test_fault_changes_only_its_part(run_turn, name):
    query = FAULTS[name].example
    clean = run_turn(query, session="s", eta=0)
    bad = run_turn(query, session="s", faults=name, eta=0)
    assert bad.exit_code == clean.exit_code or name in ("wrong_exit_code", "overblock")
    IN_PROCESS[name](clean, bad)


def test_lost_job_follow_up_exits_4(run_turn):
    first = run_turn(ASYNC, session="lost", faults="lost_job", eta=0)
    job_id = re.search(r"Job ID: (\d+)", first.answer).group(1)
    follow = run_turn(f"What are the results of job {job_id}?", session="lost", faults="lost_job")
    assert (follow.exit_code, follow.answer) == (4, "")


def test_broken_contract_applies_to_follow_ups(run_turn):
    first = run_turn(ASYNC, session="bc", eta=0)
    job_id = re.search(r"Job ID: (\d+)", first.answer).group(1)
    follow = run_turn(f"What are the results of job {job_id}?", session="bc", faults="broken_contract")
    assert "Total trades" not in follow.answer and "Verdict: " in follow.answer


def test_crash_raises_after_the_guardrail(run_turn):
    with pytest.raises(InjectedCrash):
        run_turn(MULTI, faults="crash")
    assert [e.name for e in run_turn.events] == ["guardrail"]


def test_scoped_fault_applies_only_to_matching_queries(run_turn):
    assert run_turn(PRICE, faults="empty_answer@net margin").answer
    assert run_turn(MULTI, faults="empty_answer@net margin").answer == ""


def test_extra_specialist_is_one_the_plan_does_not_call(run_turn):
    assert run_turn(TOP3, faults="extra_specialist").specialist_names == [
        "fundamentals_analysis", "market_data_analysis"]
    assert run_turn(MULTI, faults="extra_specialist").specialist_names == [
        "market_data_analysis", "fundamentals_analysis", "prediction_market_analysis"]
    turn = run_turn("What is a bond?", faults="extra_specialist")
    assert turn.specialists == [] and turn.answer == run_turn("What is a bond?").answer


def test_faults_that_do_not_apply_leave_the_turn_alone(run_turn):
    clean = run_turn(PRICE)
    for name in ("leaky_guardrail", "leaky_response", "wrong_exit_code", "paraphrase_threshold",
                 "broken_contract", "zero_trades", "no_job_id", "lost_job", "no_slug", "wrong_option_math"):
        bad = run_turn(PRICE, faults=name)
        assert (bad.answer, bad.exit_code, _names(bad)) == (clean.answer, clean.exit_code, _names(clean)), name


# ---------------------------------------------------------------------- flake


def test_flake_adds_one_soft_deviation(run_turn):
    clean = run_turn(MULTI)
    kinds = {}
    for i in range(40):
        turn = run_turn(MULTI, flake="seed:1.0", tag=f"t{i}")
        again = run_turn(MULTI, flake="seed:1.0", tag=f"t{i}")
        assert (turn.answer, _names(turn)) == (again.answer, _names(again))
        if turn.specialist_names != clean.specialist_names:
            assert turn.specialist_names == clean.specialist_names + ["prediction_market_analysis"]
            assert turn.answer == clean.answer
            kinds["extra_specialist"] = True
        else:
            extra = grounding.ungrounded(turn.answer, turn.payload_texts)
            assert len(extra) == 1 and turn.answer.startswith(clean.answer)
            kinds["extra_number"] = True
    assert set(kinds) == {"extra_specialist", "extra_number"}
    assert run_turn(MULTI, flake="seed:0").answer == clean.answer


def test_big_output_pads_only_the_first_specialist_output(run_turn):
    import json

    from obai_demo.specialists import PROVENANCE_ROWS

    clean = run_turn(MULTI)
    bad = run_turn(MULTI, faults="big_output")
    first, second = bad.specialists
    assert len(json.dumps(first.output, separators=(",", ":")).encode()) > 10_001  # past Opik's cut
    assert len(first.output["structuredContent"].pop("provenance")) == PROVENANCE_ROWS
    assert first.output == clean.specialists[0].output and second.output == clean.specialists[1].output
    assert bad.answer == clean.answer and bad.exit_code == clean.exit_code
