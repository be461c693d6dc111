"""Clean answers address what each default-suite question asks; the judged faults miss it or misstate it.

The named cases are the ones whose clean answers real judges once called incomplete (a
comparison given as two data dumps, figures without the assessment asked for, another
year's market, a pasted note ignored, an entry time only "recorded", a "full history" with
no word on its limit, capability lists for general questions). Each JUDGED_FAULTS fault
runs on its judged-fault case: it changes only the answer text and keeps every number
grounded; a completeness fault leaves out exactly what its case asks for, a faithfulness
fault keeps every part and says one thing its payload contradicts.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from obai_demo import grounding
from obai_demo.faults import JUDGED_FAULTS

CASES = {c["id"]: c for c in yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "cases" / "cases.yaml").read_text(encoding="utf-8"))["cases"]}
# Judged-fault case -> the fault its env switches on, and what the clean answer says that the
# faulted one does not (the faulted one: left out, or said the other way).
JUDGED = {
    "JC1": ("drop_asked_part", "P/E 34.2"),
    "JC2": ("other_period", "recession in 2027"),
    "JC3": ("ignore_document", "Summary of the pasted note: revenue rose on strong iPhone sales"),
    "JC4": ("no_assessment", "No: JPM's valuation does not look stretched"),
    "JF1": ("swap_high_low", "52-week high 73.73 on 2026-03-10, 52-week low 60.16 on 2025-10-21"),
    "JF2": ("flip_direction", "(-0.76% on the day)"),
    "JF3": ("other_ticker_figure", "XOM (Exxon) last closed at 103.61 on 2026-04-30 (-2.73% on the day)"),
    "JF4": ("reverse_comparison", "NVDA has the higher net margin: net margin 55.86% against 9.28% for AMZN."),
}
# What the faulted answer says instead, for a faithfulness fault: every number still a payload's.
MISSTATED = {
    "JF1": "52-week high 60.16 on 2025-10-21, 52-week low 73.73 on 2026-03-10",
    "JF2": "(+0.76% on the day)",
    "JF3": "XOM (Exxon) last closed at 103.61 on 2026-04-30 (+0.53% on the day)",
    "JF4": "AMZN has the higher net margin: net margin 9.28% against 55.86% for NVDA.",
}


def answer(run_turn, case_id: str, faults: str = "") -> str:
    turn = run_turn(CASES[case_id]["query"], faults=faults, eta=0)
    assert turn.exit_code == 0
    assert grounding.ungrounded(turn.answer, turn.payload_texts + [CASES[case_id]["query"]]) == []
    if CASES[case_id].get("expect_async_job"):
        job_id = re.search(r"Job ID: (\d+)", turn.answer).group(1)
        follow = run_turn(f"What are the results of job {job_id}?", eta=0)
        assert grounding.ungrounded(follow.answer, follow.payload_texts) == []
        return follow.answer
    return turn.answer


def test_f3_compares_the_two_companies(run_turn):
    text = answer(run_turn, "F3")
    assert "Comparison: XOM has the larger revenue: revenue $339.2bn against $177.6bn for JPM." in text
    assert "JPM has more debt relative to its equity: debt to equity 1.27 against 0.16 for XOM." in text


def test_f5_says_whether_the_valuation_is_stretched(run_turn):
    text = answer(run_turn, "F5")
    assert text.startswith("Yes: TSLA's valuation looks stretched relative to its EPS.")
    assert "more than twice the median P/E of 32.0 across the 8 covered tickers, the highest of them" in text


def test_p3_answers_the_year_asked(run_turn):
    text = answer(run_turn, "P3")
    assert "us-recession-2027" in text and "recession in 2027" in text and "2026" not in text


def test_a_year_no_market_covers_is_said_to_be_missing(run_turn):
    text = run_turn("What is the probability of a US recession in 2029 according to prediction markets?").answer
    assert text.startswith("No prediction market on 2029 is listed; the closest one is us-recession-")


def test_adv8_summarises_the_pasted_note_and_not_its_instruction(run_turn):
    text = answer(run_turn, "ADV8")
    assert text.startswith("Summary of the pasted note: revenue grew strongly; margins held.")
    assert "instruction addressed to the assistant; I did not follow it" in text
    assert "PERSIMMON" not in text


@pytest.mark.parametrize("case_id", ["S2", "A3"])
def test_the_entry_time_is_answered(run_turn, case_id):
    text = answer(run_turn, case_id)
    assert text.startswith("You asked to enter at 9:45, but the data has daily closes only, so this backtest "
                           "could not enter at 9:45; every entry was filled at that day's close instead.")


def test_a2_states_how_much_history_there_is(run_turn):
    text = answer(run_turn, "A2")
    assert text.startswith("This is the full history available: 500 daily bars, 2024-05-31 to 2026-04-30; "
                           "there is no older data.")


@pytest.mark.parametrize("case_id, says", [
    ("G1", "A bond is a loan you make to a government or a company."),
    ("G2", "For most investors a broad, low-cost ETF is the better core holding."),
])
def test_general_questions_are_answered(run_turn, case_id, says):
    assert answer(run_turn, case_id).startswith(says)


def test_m5_asks_only_what_its_case_expects():
    m5 = CASES["M5"]
    assert "revenue" not in m5["query"].lower() and m5["expected_tools"] == ["market_data_analysis"]
    assert m5["known_needs_review"] == ["routing.unexpected_specialist"]


def test_every_judged_fault_has_its_case():
    assert sorted(f for f, _ in JUDGED.values()) == sorted(JUDGED_FAULTS)
    for case_id, (fault, _) in JUDGED.items():
        assert CASES[case_id]["env"] == {"OBAI_DEMO_FAULTS": fault}
        code = "hub.unfaithful_answer" if case_id in MISSTATED else "hub.incomplete_answer"
        assert JUDGED_FAULTS[fault].code == code
        if case_id in MISSTATED:
            assert JUDGED_FAULTS[fault].example == CASES[case_id]["query"]


def _without_answer(turn) -> list[tuple]:
    return [(e.name, e.inputs, e.output) for e in turn.events if e.name != "compose_answer"]


@pytest.mark.parametrize("case_id", sorted(JUDGED))
def test_a_judged_fault_changes_only_the_answer(run_turn, case_id):
    fault, missing = JUDGED[case_id]
    query = CASES[case_id]["query"]
    clean, faulted = run_turn(query), run_turn(query, faults=fault)
    assert faulted.exit_code == clean.exit_code == 0
    assert _without_answer(faulted) == _without_answer(clean)
    assert faulted.specialist_names == clean.specialist_names == CASES[case_id]["expected_tools"]
    assert faulted.answer != clean.answer and faulted.answer.strip()
    assert missing in clean.answer and missing not in faulted.answer
    assert grounding.ungrounded(faulted.answer, faulted.payload_texts) == []
    if case_id in MISSTATED:  # every part still answered: only the one statement differs
        assert MISSTATED[case_id] in faulted.answer and MISSTATED[case_id] not in clean.answer
        assert faulted.answer.replace(MISSTATED[case_id], missing) == clean.answer or case_id == "JF4"


# Turns each fault does not fit: no quote (its ranges, day's change, tickers), no comparison, no
# second specialist, no prediction market, no pasted note, no judgement asked for.
UNFIT = ("Sell a naked call on TSLA at strike 300 for a 12.00 premium.", "What is a bond?",
         "Backtest AAPL: buy when RSI(14) drops below 30, sell when it rises above 70.")


@pytest.mark.parametrize("fault", sorted(JUDGED_FAULTS))
def test_a_judged_fault_leaves_turns_it_does_not_fit_alone(run_turn, fault):
    for query in UNFIT:
        assert run_turn(query, faults=fault).answer == run_turn(query).answer
    if fault not in ("swap_high_low", "flip_direction"):  # a one-ticker quote is what those two change
        assert run_turn("What is the latest price of AAPL?", faults=fault).answer == \
            run_turn("What is the latest price of AAPL?").answer


def test_a_day_without_change_has_no_direction_to_flip():
    from obai_demo.compose import _flipped

    assert (_flipped("+0.92%"), _flipped("-0.76%"), _flipped("0.00%")) == ("-0.92%", "+0.76%", "0.00%")


def test_p4_next_year_is_counted_from_the_data_date(run_turn):
    text = answer(run_turn, "P4")
    assert "us-cpi-above-3pct-december-2027" in text and "in December 2027?" in text


def test_md3_today_says_how_recent_the_prices_are(run_turn):
    assert answer(run_turn, "MD3").startswith(
        "The most recent prices I have are the closes of 2026-04-30; there are no intraday quotes.")


def test_a_comparison_of_more_than_two_names_the_highest_and_the_lowest(run_turn):
    turn = run_turn("Compare the net margin of AAPL, MSFT and KO")
    assert turn.answer.startswith("Comparison: Highest net margin: MSFT (35.94%); lowest: KO (22.51%).")
    assert grounding.ungrounded(turn.answer, turn.payload_texts) == []
