"""--fail-on: no criterion lets a failed unit through for want of a baseline, and each says why."""
from __future__ import annotations

import argparse

import pytest
from obai_e2e.base.errors import Exit
from obai_e2e.report.diff import build_diff, failing_not_before
from obai_e2e.report.results import summarize
from obai_e2e.run.fail_on import decide, parse


def entry(uid, verdict, reasons=()):
    return {"unit_id": uid, "case_id": uid, "feature": "f", "verdict": verdict, "reasons": list(reasons),
            "answer": "a", "rule_outcomes": []}


NOW = [entry("MD1", "fail", ["routing.skill_overload"]), entry("F1", "pass"), entry("R1", "inconclusive",
                                                                                      ["target_failed"])]


def outcome(baseline_units=None, *, findings=0):
    """What a finished run hands the decision: as results.finalize and the loss layer return it."""
    baseline = None if baseline_units is None else {"run": {"run_id": "2026-12-01/000000"}, "units": baseline_units}
    diff = build_diff("2026-12-02/000000", NOW, baseline)
    return {"summary": summarize(NOW), "baseline_run_id": (diff["baseline"] or {}).get("run_id"),
            "failing_not_before": failing_not_before(diff),
            "loss": {"findings": findings, "baseline": baseline and "2026-12-01/000000"}}


@pytest.mark.parametrize("modes", [("fail",), ("new_fail",), ("regression",), ("new_fail", "regression")])
def test_without_a_baseline_every_mode_fails_on_a_failed_unit(modes):
    d = decide(outcome(), modes)
    assert d.code == Exit.UNIT_FAILED and d.why.startswith(f"--fail-on {modes[0]}")
    if modes[0] == "new_fail":
        assert d.why == ("--fail-on new_fail: no baseline to compare with, so every failed unit counts as new: "
                         "1 failed (MD1)")
    if modes[0] == "regression":
        assert "no comparison with a baseline" in d.why


def test_with_a_baseline_only_what_did_not_fail_before_counts():
    failed_before = decide(outcome([entry("MD1", "fail"), entry("F1", "pass")]), ("new_fail",))
    assert failed_before.code == Exit.INCONCLUSIVE and failed_before.why == "1 unit(s) inconclusive"
    passed_before = decide(outcome([entry("MD1", "pass")]), ("new_fail",))
    assert passed_before.code == Exit.UNIT_FAILED
    assert passed_before.why == "--fail-on new_fail: 1 unit(s) fail that did not fail in 2026-12-01/000000: MD1"
    # A case the baseline does not have is new: its failure counts too.
    assert decide(outcome([entry("F1", "pass")]), ("new_fail",)).code == Exit.UNIT_FAILED


def test_regression_with_a_baseline_counts_only_provable_regressions():
    compared = outcome([entry("MD1", "pass")])
    assert decide(compared, ("regression",)).code == Exit.INCONCLUSIVE
    assert decide(outcome([entry("MD1", "pass")], findings=2), ("regression",)).code == Exit.REGRESSION


def test_one_shard_leaves_the_comparing_criteria_to_the_merge():
    d = decide(outcome(), ("new_fail",), shard="2/3")
    assert d.code == Exit.OK and "part 2/3" in d.why and "merge-runs" in d.why
    assert decide(outcome(), ("fail",), shard="2/3").code == Exit.UNIT_FAILED
    assert decide(outcome(), ("fail", "new_fail"), shard="2/3").code == Exit.UNIT_FAILED


def test_a_run_without_a_diff_still_fails_under_new_fail():
    out = {"summary": summarize(NOW), "baseline_run_id": None, "failing_not_before": None}
    assert decide(out, ("new_fail",)).why.endswith("counts as new: 1 failed")


def test_the_modes_are_parsed_strictly():
    assert parse("new_fail, regression,new_fail") == ("new_fail", "regression")
    for bad in ("", "sometimes", "fail,never"):
        with pytest.raises(argparse.ArgumentTypeError, match="choose from fail, new_fail, regression"):
            parse(bad)
