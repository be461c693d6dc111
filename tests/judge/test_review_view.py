"""The review view of a unit, on every recorded packet: all a judge needs, each thing once."""
from __future__ import annotations

import json

import pytest
from obai_e2e.config.units import Unit
from obai_e2e.judge.review.trace_text import compact_trace
from obai_e2e.base.modeltext import inline
from obai_e2e.judge.review.view import ANSWER_CHARS, DETAIL_CHARS, unit_view
from obai_e2e.judge.rubric.outcome import FAIL, NEEDS_REVIEW, PASS
from recorded import CLEAN, FAULTS, case, checked, clean_unit, name_of, packet, recordings


def view_of(group: str, name: str, panel=None, short=True):
    p = packet(group, name)
    return p, checked(group, name), unit_view(Unit(case(p.case_id), 1, 1), p, checked(group, name), panel, "A",
                                              short=short)


@pytest.mark.parametrize("group,name", recordings(), ids=[name_of(*r) for r in recordings()])
def test_the_view_holds_every_failed_or_soft_rule_with_all_its_evidence_and_no_other_rule(group, name):
    p, check, view = view_of(group, name)
    text = view.text()
    found = [o for o in check.outcomes if o.status in (FAIL, NEEDS_REVIEW)]
    assert len(view.findings) == len(found)
    for o in found:
        for code in o.tripped_codes:
            assert f"{o.status} {code}" in text or code in text, code
        assert inline(o.detail, DETAIL_CHARS) in text
        for e in o.evidence:
            assert json.dumps(e.excerpt, ensure_ascii=False) in text, (o.rule, e.excerpt)
            if e.span_id:
                assert f"span {e.span_id} ({e.source})" in text
    for o in check.outcomes:
        if o.status == PASS:
            assert f"pass {o.rule}" not in text and o.detail not in "\n".join(f["detail"] for f in view.findings)
    passed = sum(1 for o in check.outcomes if o.status == PASS)
    assert (f"{passed} passed" in text) == bool(check.outcomes)
    assert text.count(f"question: {p.query}") == 1
    assert view.open == [q["id"] for q in check.questions]
    if view.open:
        assert "open: " + ", ".join(view.open) in text


def sections(text: str) -> dict[str, list[str]]:
    """A curated text's sections: the line at the margin → the lines under it."""
    out: dict[str, list[str]] = {}
    head = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            head = line
            out[head] = []
        elif line.strip():
            out[head].append(line)
    return out


@pytest.mark.parametrize("group,name", [(CLEAN, clean_unit("MD1")), (FAULTS, "zero_trades"), (CLEAN, clean_unit("A1"))])
def test_the_trace_drops_only_what_the_view_prints_elsewhere(group, name):
    p, _, view = view_of(group, name)
    whole, shown = sections(p.trace.curated), sections(view.trace)
    assert "QUERY:" in whole and "FINAL RESPONSE:" in whole
    assert "QUERY:" not in shown and "FINAL RESPONSE:" not in shown  # the question and the answer are above it
    shown_answer = "\n".join("  " + line for line in p.answer.strip().splitlines())
    assert view.text().count(shown_answer) == 1  # once, as the answer, not again as the final response
    for head, lines in whole.items():
        if head in ("QUERY:", "FINAL RESPONSE:"):
            continue
        if head == "HUB-TO-STRATEGY INPUT:" and lines[0].strip().startswith("span "):
            span = lines[0].split()[-1]
            assert f"HUB-TO-STRATEGY INPUT: as in the input of span {span} above" in shown
            assert lines[1].strip() in view.trace  # inside that span's input
            continue
        if lines in ([], ["    (none)"], ["    (no strategy call)"]):
            assert any(h.startswith(head) for h in shown), head
            continue
        assert shown[head] == lines, head
    if p.followup is not None:
        assert view.followup["question"] == p.followup.query and view.followup["trace"]


def test_a_final_response_that_differs_from_the_answer_stays_in_the_trace():
    p = packet(CLEAN, clean_unit("MD1"))
    assert "FINAL RESPONSE:" in compact_trace(p.trace.curated, "another answer")
    assert "FINAL RESPONSE:" not in compact_trace(p.trace.curated, p.answer)


def test_a_unit_with_nothing_left_to_judge_is_shown_short_and_whole_on_request():
    panel = {"questions": {"hub.incomplete_answer": {"decided": True, "majority": "complete", "trips": False,
                                                       "votes": {"complete": 3}},
                           "hub.unfaithful_answer": {"decided": True, "majority": "faithful", "trips": False,
                                                       "votes": {"faithful": 3}}}}
    _, _, short = view_of(CLEAN, clean_unit("MD1"), panel)
    assert not short.needs_judgment and short.trace is None and short.open == []
    assert "panel: hub.incomplete_answer: decided complete (complete 3)" in short.text()
    assert "panel: hub.unfaithful_answer: decided faithful (faithful 3)" in short.text()
    # with faithfulness left to its judge, the unit is shown whole
    _, _, half = view_of(CLEAN, clean_unit("MD1"), {"questions": {"hub.incomplete_answer": panel["questions"][
        "hub.incomplete_answer"]}})
    assert half.needs_judgment and half.open == ["hub.unfaithful_answer"] and half.trace
    _, _, whole = view_of(CLEAN, clean_unit("MD1"), panel, short=False)
    assert whole.trace and "TRACE " in whole.text()


def test_long_answers_are_cut_with_a_visible_marker_that_says_where_the_rest_is():
    p, check, _ = view_of(CLEAN, clean_unit("MD1"))
    p.answer = "\n".join(f"line {i} " + "x" * 60 for i in range(200))
    view = unit_view(Unit(case(p.case_id), 1, 1), p, check, None, "A", short=False)
    shown = view.text().split("answer:\n", 1)[1].split("\ntrace:", 1)[0]
    assert len(shown) < ANSWER_CHARS + 120 and "review.py --id MD1 --full" in shown
    assert shown.startswith("  line 0 ") and all(line.startswith("  ") for line in shown.splitlines())


def test_the_json_form_holds_the_same_fields_as_the_text():
    _, _, view = view_of(FAULTS, "ungrounded_number")
    data = view.to_json()
    assert data["findings"][0]["code"] == "hub.unverified_number:987.65"
    assert set(data) >= {"unit", "rules", "question", "answer", "trace", "findings", "open", "admissible"}
    assert len(view.text()) < len(json.dumps(data, ensure_ascii=False))
