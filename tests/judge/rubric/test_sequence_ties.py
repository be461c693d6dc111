"""routing.sequence_violation when an SDK stamps milliseconds: two spans begun in the same millisecond
are a tie, not out of order; a real reversal still fails, and the curated text says "tie" where one is.

The recorded demo turn M1 (market data, then fundamentals) is re-stamped as a millisecond SDK would
stamp it; only the two specialists' start times change between the rows.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from obai_e2e.base.clock import parse_iso
from obai_e2e.judge.rubric.check import check_packet
from obai_e2e.trace.curate import curate
from recorded import case, clean_unit, config, packet, raw

FIRST, SECOND = "market_data_analysis", "fundamentals_analysis"


def ms(stamp: str, shift_ms: int = 0) -> str:
    t = parse_iso(stamp) + timedelta(milliseconds=shift_ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def swap_ids(spans: list[dict], a: dict, b: dict) -> None:
    """Swap two spans' ids (and their children's parent ids): at equal stamps the ids set the start order."""
    ids = {a["id"]: b["id"], b["id"]: a["id"]}
    for s in spans:
        s["parent_span_id"] = ids.get(s.get("parent_span_id"), s.get("parent_span_id"))
    a["id"], b["id"] = b["id"], a["id"]


def judged(second_minus_first_ms: int | None, *, swapped: bool = False):
    """M1 with millisecond stamps; the second specialist starts this many ms after the first (None: as recorded)."""
    unit = clean_unit("M1")
    trace, spans = raw("clean", unit)
    trace["start_time"] = ms(trace["start_time"])
    for s in spans:
        s["start_time"] = ms(s["start_time"])
    first = next(s for s in spans if s["name"] == FIRST)
    if swapped:
        swap_ids(spans, first, next(s for s in spans if s["name"] == SECOND))
    if second_minus_first_ms is not None:
        second = next(s for s in spans if s["name"] == SECOND)
        second["start_time"] = ms(first["start_time"], second_minus_first_ms)
    curated = curate(trace, spans, config().vocabulary)
    p = packet("clean", unit)
    p.trace.digest, p.trace.curated = curated.digest, curated.text
    result = check_packet(p, case("M1"), config())
    return next(o for o in result.outcomes if o.rule == "routing.sequence_violation"), curated.text


@pytest.mark.parametrize("swapped", [False, True], ids=["ids-in-order", "ids-reversed"])
def test_two_specialists_begun_in_the_same_millisecond_are_a_tie_whatever_their_ids(swapped):
    outcome, text = judged(0, swapped=swapped)
    assert outcome.status == "pass", outcome
    assert f"{FIRST} and {SECOND} started in the same instant" in outcome.detail and "a tie" in outcome.detail
    calls = text.split("SPECIALIST CALLS (start order):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(calls) == 2 and "tie: same start as 1." in calls[1] and "tie" not in calls[0]
    # the listed order follows the ids, which is why only the stamps can tell a tie from a reversal
    assert (SECOND in calls[0]) is swapped, calls


@pytest.mark.parametrize("shift, status", [(-1, "fail"), (1, "pass"), (None, "pass")])
def test_a_millisecond_apart_is_an_order(shift, status):
    outcome, text = judged(shift)
    assert outcome.status == status, outcome
    assert "tie" not in outcome.detail and "tie:" not in text
    if status == "fail":
        assert outcome.code == "routing.sequence_violation"
        assert outcome.detail.startswith(f"{SECOND} (+") and f"started before {FIRST}" in outcome.detail


def test_a_digest_without_ties_is_judged_by_start_order():
    """A packet records its ties; one that records none (every packet stored before ties were kept, and every
    trace whose role spans began at distinct instants) is judged by its start order alone."""
    p = packet("clean", clean_unit("M1"))
    assert p.trace.digest.ties == [] and "ties" not in p.trace.digest.to_json()
    assert next(o for o in check_packet(p, case("M1"), config()).outcomes
                if o.rule == "routing.sequence_violation").status == "pass"
    rows = p.trace.digest.spans  # the two specialists' places in the start order, swapped
    i = next(k for k, r in enumerate(rows) if r.name == FIRST)
    j = next(k for k, r in enumerate(rows) if r.name == SECOND)
    rows[i], rows[j] = rows[j], rows[i]
    assert next(o for o in check_packet(p, case("M1"), config()).outcomes
                if o.rule == "routing.sequence_violation").status == "fail"
    # the same swap with the two recorded as a tie is no violation
    first, second = (next(c.span_id for c in p.trace.digest.specialist_calls if c.name == n) for n in (FIRST, SECOND))
    p.trace.digest.ties = [[second, first]]
    assert next(o for o in check_packet(p, case("M1"), config()).outcomes
                if o.rule == "routing.sequence_violation").status == "pass"
