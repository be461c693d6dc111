"""Numeric grounding: numbers read from text, compared as values, and the rule that checks every one.

The comparison cases are the ones references/rubric.md lists for hub.unverified_number;
the rule's cases run on recorded demo packets.
"""
import pytest
from obai_e2e.judge.rubric.answer import unverified_numbers
from obai_e2e.judge.rubric.check import context_for
from obai_e2e.judge.rubric.numbers import Pool, extract
from recorded import case, config, packet


def texts(text, **kw):
    return [n.text for n in extract(text, **kw)]


@pytest.mark.parametrize("text,numbers", [
    ("closed at 1,234.50 USD (+0.84%) on 2026-11-27 at 9:45", ["1,234.50", "+0.84%", "2026-11-27", "9:45"]),
    ("52-week high, 50-day average: 3", ["3"]),                  # descriptors are not figures
    ("1. AAPL 25.3%\n2. MSFT 36.1%", ["25.3%", "36.1%"]),       # list markers are not figures
    ("1. 25% of it", ["25%"]),                                    # ... unless the number is a percentage
    ("condition 0x" + "ab" * 32, []),                             # ids are not figures
    ("volume $54.3M, cap 1.2 billion, 3k trades", ["$54.3M", "1.2 billion", "3k"]),
    ("down −8.3% to .5 at 16:00:00", ["−8.3%", ".5", "16:00:00"]),
    ("RSI14 and Q3 and v2", []),                                  # glued to a word
])
def test_what_counts_as_a_number(text, numbers):
    assert texts(text) == numbers


def test_list_markers_count_where_they_are_asked_for():
    assert texts("1. first\n2. second", skip_list_markers=False) == ["1", "2"]


@pytest.mark.parametrize("answer,payload,grounded", [
    ("1,234.5", "value 1234.50", True),          # the same value written two ways
    ("1234.50", "value 1,234.5", True),
    ("12.5%", "ratio 0.125", True),              # a percentage also matches its fraction
    ("12.5%", "12.5 percent", True),
    ("0.125", "12.5%", True),                    # ... and the other way round
    ("$54.3M", "volume 54,300,000", True),       # scale suffixes
    ("54.3 million", "54300000 shares", True),
    ("$1.2bn", "1,200,000,000", True),
    ("3k", "3000", True),
    ("-8.3%", "drawdown 8.3%", True),            # the sign is ignored
    ("+0.92%", "-0.92%", True),
    ("−8.3%", "8.3", True),
    ("187.2", "close 187.23", False),            # no rounding
    ("187.23", "close 187.2", False),
    ("2026-11-27", "on 2026-11-27", True),       # dates and times verbatim
    ("2026-11-28", "on 2026-11-27", False),
    ("9:45", "at 9:45", True),
    ("9:45", "at 09:45", False),
    ("2026", "on 2026-11-27", False),            # a date is one token, not three numbers
    ("52", "52-week high", False),               # a descriptor holds no figure
])
def test_grounding(answer, payload, grounded):
    pool = Pool([payload])
    assert extract(answer) and all(pool.contains(n) for n in extract(answer)) is grounded


def check_numbers(p):
    return unverified_numbers(context_for(p, case(p.case_id), config()))


@pytest.mark.parametrize("unit", ["MD1", "MD5", "F2", "S2", "O2", "P1", "M7"])
def test_every_number_of_a_clean_answer_is_checked_and_found(unit):
    p = packet("clean", unit)
    outcome = check_numbers(p)
    n = len(extract(p.answer))
    assert n >= 3
    assert (outcome.status, outcome.detail) == ("pass", f"all {n} number(s) found in the payloads or the query")


def test_each_ungrounded_number_is_its_own_code_once_with_its_evidence():
    p = packet("clean", "MD1")
    p.answer += " It may reach 987.65 or 1,111.5 soon, and 987.65 again."
    outcome = check_numbers(p)
    assert outcome.status == "needs_review"
    assert outcome.codes == ["hub.unverified_number:987.65", "hub.unverified_number:1,111.5"]
    assert outcome.code == outcome.codes[0]
    assert [e.source for e in outcome.evidence] == ["answer", "answer"]
    assert "987.65" in outcome.evidence[0].excerpt and "1,111.5" in outcome.evidence[1].excerpt
    n = len(extract(p.answer))
    assert outcome.detail == f"2 of {n} number(s) in the answer match no specialist payload"


def test_a_number_from_the_query_is_grounded():
    p = packet("clean", "O1")
    strike = "200"
    assert strike in p.query
    p.answer += f" (strike {strike})"
    assert check_numbers(p).status == "pass"


def test_a_number_from_the_recorded_fault_is_the_only_one_flagged():
    outcome = check_numbers(packet("faults", "ungrounded_number"))
    assert outcome.codes == ["hub.unverified_number:987.65"]


def test_the_follow_up_answer_is_checked_against_the_follow_up_payloads():
    p = packet("clean", "A1")
    assert check_numbers(p).status == "pass"
    p.followup.answer += " Best month: +42.42%."
    outcome = check_numbers(p)
    assert outcome.codes == ["hub.unverified_number:42.42%"]  # the sign is not part of the code
    assert [e.source for e in outcome.evidence] == ["followup_answer"]


def test_a_refusal_is_not_checked_for_numbers():
    p = packet("clean", "R1")
    p.answer += " 42"
    assert check_numbers(p).status == "skipped"
