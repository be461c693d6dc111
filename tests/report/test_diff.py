"""What changed since the baseline: every class of the diff on hand-built entries, its schema and its texts."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
from obai_e2e.base.schema import load_schema
from obai_e2e.report.diff import (
    build_diff,
    diff_fields,
    markdown_lines,
    summary,
    summary_line,
)

STORED_RUN = Path(__file__).resolve().parents[1] / "judging" / "data" / "demo-run" / "results.json"


def entry(uid, verdict, reasons=(), *, case=None, stochastic=False, outcomes=(), answer="a"):
    return {"unit_id": uid, "case_id": case or uid.split(".r")[0], "feature": "f", "verdict": verdict,
            "reasons": list(reasons), "stochastic": stochastic, "answer": answer,
            "rule_outcomes": [{"rule": r, "status": s, "code": c} for r, s, c in outcomes]}


BASE = {"run": {"run_id": "2026-01-01/000000", "finished_at": "x"}, "units": [
    entry("A", "pass"), entry("B", "needs_review", ["hub.incomplete_answer"]),
    entry("C", "fail", ["routing.skill_missing"], outcomes=[("routing.skill_missing", "fail", "routing.skill_missing")]),
    entry("D", "fail", ["hub.empty_response"]), entry("E", "fail", ["hub.empty_response"]),
    entry("F", "pass"), entry("G", "pass"), entry("H", "inconclusive", ["cli_timeout"]),
    entry("I", "fail", ["hub.empty_response"]), entry("GONE", "pass"),
    entry("S.r1", "pass", stochastic=True), entry("S.r2", "pass", stochastic=True),
    entry("T.r1", "pass", stochastic=True), entry("T.r2", "fail", ["hub.empty_response"], stochastic=True),
]}
NEW = [
    entry("A", "fail", ["routing.skill_overload"], outcomes=[("routing.skill_overload", "fail", "routing.skill_overload")],
          answer="new answer"),
    entry("B", "fail", ["hub.empty_response"]),
    entry("C", "pass", outcomes=[("routing.skill_missing", "pass", None)]),
    entry("D", "fail", ["hub.empty_response"]),
    entry("E", "fail", ["specialist.options.math"]),
    entry("F", "inconclusive", ["trace_not_found"]),
    entry("G", "needs_review", ["routing.unexpected_specialist"]),
    entry("H", "inconclusive", ["cli_timeout"]),
    entry("I", "inconclusive", ["trace_not_found"]),
    entry("NEW", "pass"),
    entry("S.r1", "pass", stochastic=True), entry("S.r2", "needs_review", ["hub.unverified_number:1.5"], stochastic=True),
    entry("T.r1", "pass", stochastic=True), entry("T.r2", "pass", stochastic=True),
]


def classes(diff):
    return {u["unit_id"]: u["class"] for u in diff["units"]}


def test_every_class():
    diff = build_diff("2026-01-02/000000", NEW, BASE)
    assert classes(diff) == {
        "A": "new_fail", "B": "new_fail", "C": "fixed", "D": "still_failing", "E": "still_failing",
        "F": "new_inconclusive", "G": "changed", "H": "unchanged", "I": "new_inconclusive", "NEW": "new_case",
        "GONE": "removed_case", "S.r1": "flaky", "S.r2": "flaky", "T.r1": "unchanged", "T.r2": "fixed",
    }
    by_id = {u["unit_id"]: u for u in diff["units"]}
    assert by_id["D"]["codes_changed"] is False and by_id["E"]["codes_changed"] is True
    assert by_id["A"]["changed_rules"] == [{"rule": "routing.skill_overload", "status": "fail",
                                           "code": "routing.skill_overload", "baseline_status": None,
                                           "baseline_code": None}]
    assert by_id["A"]["answer"] == "new answer" and by_id["A"]["baseline_answer"] == "a"
    assert diff["counts"]["new_fail"] == 2 and diff["counts"]["flaky"] == 2 and sum(diff["counts"].values()) == 15
    rates = {c["case_id"]: c for c in diff["stochastic_cases"]}
    assert rates["S"]["flaky"] and rates["S"]["pass_rate"] == 0.5 and rates["S"]["baseline_pass_rate"] == 1.0
    assert not rates["T"]["flaky"] and rates["T"]["pass_rate"] == 1.0 and rates["T"]["baseline_pass_rate"] == 0.5
    jsonschema.validate(diff, load_schema("diff.v1.schema.json"))


def test_without_a_baseline_every_unit_is_new_and_the_text_says_why():
    diff = build_diff("r", NEW[:2], None)
    assert set(classes(diff).values()) == {"new_case"} and diff["baseline"] is None
    assert summary_line(diff).startswith("changes: no baseline")
    assert "no baseline" in markdown_lines(diff)[0]
    jsonschema.validate(diff, load_schema("diff.v1.schema.json"))


def test_summary_texts_lead_with_new_fails():
    diff = build_diff("r", NEW, BASE)
    line = summary_line(diff)
    assert line.startswith("changes since 2026-01-01/000000: 2 new_fail (A, B); 2 new_inconclusive (F, I); 2 flaky")
    lines = markdown_lines(diff)
    assert lines[0] == "- **2 new_fail**: A (routing.skill_overload; was pass), B (hub.empty_response; was needs_review)"
    assert summary(diff)["new_fail"] == ["A", "B"] and "unchanged" not in summary(diff)


def test_the_same_run_again_still_shows_what_keeps_failing():
    same = build_diff("r", BASE["units"], BASE)
    # T's repeats disagree in the run itself (flaky); C, D, E fail on both sides.
    assert summary_line(same) == "changes since 2026-01-01/000000: 2 flaky (T.r1, T.r2); 4 still_failing (C, D, E, I)"


def test_nothing_changed():
    assert summary_line(build_diff("r", [entry("A", "pass")], {"run": {"run_id": "b"}, "units": [entry("A", "pass")]})) \
        == "changes since b: none (1 unchanged)"
    assert markdown_lines(build_diff("r", [entry("A", "pass")], {"run": {"run_id": "b"},
                                                                 "units": [entry("A", "pass")]})) == [
        "- no verdict changed (1 units unchanged)"]


def test_hostile_ids_and_codes_cannot_break_the_markdown():
    base = {"run": {"run_id": "b"}, "units": [entry("X", "pass")]}
    new = [entry("X", "fail", ["trace.error_span:a|b`<img src=x onerror=alert(1)>"])]
    line = markdown_lines(build_diff("r", new, base))[0]
    assert "|" not in line.replace("\\|", "") and "`" not in line.replace("\\`", "")
    assert "<img" not in line.replace("\\<img", "")  # escaped: Markdown shows it as text


def test_a_channel_of_its_own_is_no_flake():
    cli = [entry(f"S.r{k}", "pass", case="S", stochastic=True) for k in (1, 2, 3)]
    ui = [dict(entry(f"S.ui.r{k}", "fail", ["ui.raw_markup"], case="S", stochastic=True), channel="ui")
          for k in (1, 2, 3)]
    diff = build_diff("2026-01-02/000000", cli + ui, None)
    assert set(classes(diff).values()) == {"new_case"}
    assert [(c["case_id"], c["flaky"], c["pass_rate"]) for c in diff["stochastic_cases"]] == [
        ("S", False, 1.0), ("S.ui", False, 0.0)]
    jsonschema.validate(diff, load_schema("diff.v1.schema.json"))


def test_the_fields_the_diff_keeps_give_the_same_diff_on_stored_units():
    # finalize compares diff_fields() of both runs' units; the diff must be the one whole units give.
    base = json.loads(STORED_RUN.read_text(encoding="utf-8"))
    new = copy.deepcopy(base["units"][:-1])            # the last unit is gone from this run
    new[0].update(verdict="fail", reasons=["routing.skill_missing"], answer="another answer")
    new[0]["rule_outcomes"][0].update(status="fail", code="routing.skill_missing")
    new[1].update(verdict="needs_review", reasons=["hub.unverified_number:2"])
    new[1]["rule_outcomes"][-1].update(status="needs_review", code="hub.unverified_number")
    new[2]["rule_outcomes"][1]["detail"] = "only the detail differs"
    new.append({**copy.deepcopy(new[3]), "unit_id": "NEW1", "case_id": "NEW1"})

    whole = build_diff("2026-12-01/000000", new, base)
    kept = build_diff("2026-12-01/000000", [diff_fields(e) for e in new],
                      {**base, "units": [diff_fields(e) for e in base["units"]]})
    assert kept == whole
    assert {"new_fail", "changed", "removed_case", "new_case", "unchanged"} <= {u["class"] for u in whole["units"]}
    assert next(u for u in whole["units"] if u["unit_id"] == new[0]["unit_id"])["changed_rules"]
    assert all("evidence" not in o for e in new for o in diff_fields(e)["rule_outcomes"])


def test_an_async_units_follow_up_answer_is_compared_and_shown():
    from obai_e2e.report.html_changes import changes_view

    queued = "Backtest queued. Job ID: 1904 ETA: 2 s"
    before = {**entry("A1", "pass", answer=queued), "followup_answer": "Total trades: 32\nVerdict: PROFITABLE"}
    now = {**entry("A1", "fail", ["specialist.strategy.zero_trades"], answer=queued),
           "followup_answer": "Total trades: 0\nVerdict: NO TRADES"}
    diff = build_diff("r", [diff_fields(now)], {"run": {"run_id": "b"}, "units": [diff_fields(before)]})
    unit = diff["units"][0]
    assert unit["class"] == "new_fail" and unit["answer"] == unit["baseline_answer"] == queued
    assert unit["followup_answer"] == "Total trades: 0\nVerdict: NO TRADES"
    assert unit["baseline_followup_answer"] == "Total trades: 32\nVerdict: PROFITABLE"
    jsonschema.validate(diff, load_schema("diff.v1.schema.json"))
    shown = changes_view(diff)["groups"][0]["units"][0]["answers"]
    assert [a["label"] for a in shown] == ["answer", "follow-up answer"] and shown[0]["same"]
    follow = shown[1]
    assert [t for t, changed in follow["baseline"] if changed] == ["32", "PROFITABLE"]
    assert [t for t, changed in follow["now"] if changed] == ["0", "NO TRADES"]
    assert "".join(t for t, _ in follow["now"]) == now["followup_answer"]
    # a unit that is not async shows its one answer
    plain = build_diff("r", [diff_fields(entry("B", "fail", ["x"]))], {"run": {"run_id": "b"}, "units": [entry("B", "pass")]})
    assert "followup_answer" not in plain["units"][0]
