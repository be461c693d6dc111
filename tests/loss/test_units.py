"""Per-repeat category losses from results.json units."""
import pytest
from obai_e2e.loss.units import ABORTED, COMPLETED, PLANNED, UnitScorer, tripped_codes

from .helpers import cat, catalog, ev, unit

CATALOG = catalog([
    cat("routing", 0.5, ["routing.*"]),
    cat("output", 0.3, ["specialist.*", "hub.unverified_number:*"], max_=2),
    cat("completeness", 0.2, ["hub.incomplete_answer"], "model_judged"),
])
R, OUT, C = 0, 1, 2


def score(u, mode="A", c=CATALOG):
    return UnitScorer(c, mode).score(u)


def test_clean_unit_from_a_real_run():
    r = score(unit("MD1"))
    assert r.state == COMPLETED
    assert r.losses == [0.0, 0.0, None]  # no judge answer: completeness is unbewertbar, not 0
    assert r.total == 0.0


def test_severities_distinct_codes_and_cap():
    u = unit("X1", trips=[("routing.skill_missing", "fail", [ev("x")]),
                          ("routing.unexpected_specialist", "needs_review", []),
                          ("routing.skill_missing", "needs_review", []),          # same code again: counted once, as fail
                          (["hub.unverified_number:12", "hub.unverified_number:7"], "needs_review", []),
                          ("specialist.market_data_analysis.empty", "fail", [])])
    assert tripped_codes(u) == {"routing.skill_missing": 1.0, "routing.unexpected_specialist": 0.5,
                                "hub.unverified_number:12": 0.5, "hub.unverified_number:7": 0.5,
                                "specialist.market_data_analysis.empty": 1.0}
    r = score(u)
    assert r.losses[R] == 1.0             # min(1 + 0.5, 1) / 1
    assert r.losses[OUT] == 1.0             # min(0.5 + 0.5 + 1, 2) / 2
    assert r.losses[C] is None
    assert r.total == pytest.approx((0.5 * 1 + 0.3 * 1) / 0.8)   # weights over scored categories only


def test_max_two_scales():
    r = score(unit("X1", trips=[("hub.unverified_number:12", "needs_review", [])]))
    assert r.losses[OUT] == 0.25            # 0.5 / 2


def test_dismissed_and_overridden_codes_do_not_count():
    u = unit("X1", trips=[("hub.unverified_number:12", "needs_review", []), ("routing.skill_missing", "fail", [])],
             answers={"hub.unverified_number:12": "dismissed"},
             override={"rule": "routing.skill_missing", "reason": "the skill is loaded under another name"})
    assert tripped_codes(u) == {}
    assert score(u).losses[:2] == [0.0, 0.0]


def test_model_judged_from_ratings_answers_or_unbewertbar():
    assert score(unit("X1", ratings={"hub.incomplete_answer": [1, 0]})).losses[C] == 0.5
    r = score(unit("X1", ratings={"hub.incomplete_answer": [1, None, 1]}))
    assert r.losses[C] == 1.0 and r.ratings[C] == [1.0, 1.0]
    assert score(unit("X1", ratings={"completeness": [0, 1, 1]})).losses[C] == pytest.approx(2 / 3)  # category question
    # all judges abstained and no answer: unbewertbar
    assert score(unit("X1", ratings={"hub.incomplete_answer": [None, None]})).losses[C] is None
    # no panel: the judge's answer ("no" = the answer does not address the ask)
    r = score(unit("X1", answers={"hub.incomplete_answer": "no"}))
    assert r.losses[C] == 1.0 and r.ratings[C] == [1.0]
    assert score(unit("X1", answers={"hub.incomplete_answer": "yes"})).losses[C] == 0.0
    assert score(unit("X1", answers={"hub.incomplete_answer": "abstain"})).losses[C] is None


def test_states():
    assert score(unit("X1", verdict="inconclusive")).state == ABORTED
    r = score(unit("X1", verdict="not_judged"))
    assert r.state == PLANNED and r.losses == [None, None, None] and r.total is None
    assert score(unit("X1", verdict="needs_review", trips=[("routing.unexpected_specialist", "needs_review", [])])).state == COMPLETED


def test_mode_b_needs_execution_is_unbewertbar():
    c = catalog([cat("retry", 0.4, ["trace.error_span:*"], needs_execution=True), cat("routing", 0.6, ["routing.*"]),
                 cat("ui", 0.1, ["hub.incomplete_answer"], "model_judged", needs_execution=True)])
    u = unit("X1", trips=[("trace.error_span:hub", "fail", [])], ratings={"hub.incomplete_answer": [1, 1]})
    a = score(u, "A", c)
    assert a.losses == [1.0, 0.0, 1.0]
    b = score(u, "B", c)
    assert b.losses == [None, 0.0, None]           # never 0 for what was not scored
    assert b.total == 0.0                          # the total is over scored categories only
    assert score(unit("X1", mode="B", trips=[("trace.error_span:hub", "fail", [])]), "A", c).losses[0] is None
