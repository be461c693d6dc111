"""The loss facts of report.html say what they mean: only a withheld score is an alarm; coverage names its measure."""
from __future__ import annotations

from obai_e2e.report.html_loss import loss_view

HEALTHY = {"catalog_version": "v3", "mode": "A", "provenance": "synthetic", "mde": 0.05, "completion_rate": 1.0,
           "partitions": []}


def facts(**suite) -> dict:
    return loss_view({**HEALTHY, **suite}, None)["suite"]


def test_a_run_with_nothing_to_score_reads_not_applicable_not_an_alarm():
    view = facts(suite_score=None, suite_status="unbewertbar", coverage=0.0)
    assert view["score"].startswith("not applicable: no unit of this run falls in a category")
    assert view["score_missing"] is False
    assert view["coverage"].startswith("0.0 % of the plan's weight in partitions with n ≥ n_min (none has")


def test_a_withheld_score_is_the_alarm():
    view = facts(suite_score=None, suite_status="suppressed", coverage=0.5)
    assert view["score"].startswith("not reported (suppressed)") and view["score_missing"] is True
    assert view["coverage"] == "50.0 % of the plan's weight in partitions with n ≥ n_min"


def test_a_scored_run_and_a_plan_without_weight():
    view = facts(suite_score=0.0125, suite_status="scored", coverage=None)
    assert (view["score"], view["score_missing"]) == ("0.0125", False)
    assert view["coverage"] == "nothing to cover (the plan has no weighted partition)"
    assert facts(suite_score=0.0, suite_status="scored")["coverage"] == ""  # an older suite.json without it
