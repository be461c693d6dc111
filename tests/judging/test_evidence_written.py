"""Cited numbers and quotes are accepted when they occur in the packet's text as written.

The packet below is shaped like a stored one (one question, one payload). A judge reads
it as JSON, so it may copy a line break as the two characters ``\\n``, drop the Markdown
marks around a label, or cite the year of a date: each of these is a passage of the text.
Anything that is not there, or only part of a longer number, stays refused.
"""
from __future__ import annotations

import pytest
from obai_e2e.base.errors import VerdictInvalid
from obai_e2e.judge.panel import schema

ANSWER = ("**Verdict:** BUY on 2026-04-30 at 9:45.\n"
          "AAPL closed at $238.41 (+1.5%), volume 52.3M shares; the stop sits 30 days out at 12,480.75 USD.\n"
          "Total trades: 12\nWin rate: 58%")
PACKET = {
    "packet_id": "a1b2c3d4e5f60718", "response_schema_version": 1,
    "query": "Backtest AAPL with RSI(14) < 30 from 2026-01-02", "final_answer": ANSWER,
    "specialist_payloads": [{"ref": "P1", "turn": "first turn", "specialist": "strategy_analysis",
                             "span_id": "span-1", "output_text": "Sharpe 1.42; max drawdown -8.3%"}],
    "questions": [{"id": "q1", "feeds": "hub.incomplete_answer", "applies": True,
                   "choices": ["complete", "incomplete", "abstain"], "definition": "Complete?"}],
}


def entry(*, numbers=(), quotes=None) -> dict:
    evidence = {"spans": [], "numbers": list(numbers)}
    if quotes is not None:
        evidence["quotes"] = list(quotes)
    return {"packet_id": PACKET["packet_id"], "answers": [
        {"question": "q1", "choice": "complete", "evidence": evidence, "rationale": "All parts are answered."}]}


@pytest.mark.parametrize("number", [
    "2026",            # the year of a date
    "04-30",           # a part of a date
    "2026-04-30",      # the whole date
    "9:45",            # a clock time
    "$238.41",         # a price with its currency sign
    "238.41",
    "12,480.75 USD",   # a number with its unit
    "12480.75",        # the same value written without the separator (found by value)
    "52.3M",
    "+1.5%",
    "1.5 %",           # by value
    "30 days",
    "RSI(14)",
    "-8.3%",           # from the payload
    "12",              # the trade count, after "Total trades:" and a line break
])
def test_a_number_written_in_the_packet_is_evidence(number):
    assert schema.validate_entry(entry(numbers=[number]), PACKET).value["answers"][0]["evidence"]["numbers"] == [number]


@pytest.mark.parametrize("number", [
    "20",       # only the start of 2026: glued to more digits
    "238.4",    # a decimal part cut short
    "38.41",    # the tail of a larger number
    "480.75",   # after a thousands separator
    "2027",     # not there at all
    "59%",
])
def test_a_number_that_is_not_written_there_is_refused(number):
    with pytest.raises(VerdictInvalid, match="does not occur in this packet's text"):
        schema.validate_entry(entry(numbers=[number]), PACKET)


@pytest.mark.parametrize("quote", [
    "Verdict: BUY on 2026-04-30",                 # the bold marks dropped: they are formatting
    "**Verdict:** BUY",                           # or kept, as written
    "Total trades: 12 Win rate: 58%",             # across a line break, as a space
    "Total trades: 12\\nWin rate: 58%",           # across a line break, copied from the JSON view
    "at 9:45.\nAAPL closed",                      # a real line break, across two sentences
    "the stop sits 30 days out",
    "max drawdown -8.3%",                         # from the payload
])
def test_a_quote_crossing_formatting_is_a_passage_of_the_text(quote):
    assert schema.validate_entry(entry(numbers=["12"], quotes=[quote]), PACKET)


@pytest.mark.parametrize("quote, message", [
    ("Verdict: SELL on 2026-04-30", "is not a passage of this packet's text"),
    ("Total trades: 13", "is not a passage of this packet's text"),
    ("Win rate: 58% over 3 years", "is not a passage of this packet's text"),
    ("****", "too short"),   # nothing left once the marks are dropped
])
def test_a_quote_that_does_not_occur_is_still_refused(quote, message):
    with pytest.raises(VerdictInvalid, match=message):
        schema.validate_entry(entry(numbers=["12"], quotes=[quote]), PACKET)


def test_written_evens_out_escapes_marks_and_whitespace():
    assert schema.written('a\\n**b**  `c`\\t\\"d\\" \\u00e9') == 'a b c "d" é'
