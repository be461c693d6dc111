"""The decision rule: compared cells, z, intervals, which cells are findings and in what order."""
import math
from statistics import NormalDist

import numpy as np
import pytest
from obai_e2e.loss.compare import compare
from obai_e2e.loss.score import score
from obai_e2e.loss.stats import z_critical

from .helpers import cat, catalog, ev, plan, results, unit

CATALOG = catalog([cat("routing", 0.4, ["routing.*"]), cat("output", 0.4, ["specialist.*"]),
                   cat("guard", 0.2, ["guardrail.*"])])
PLAN = ("mde: 0.05\npartitions:\n"
        "  - labels: {intent: p}\n    frequency: 0.5\n    damage: 1\n    s: 0\n"     # n_min 2
        "  - labels: {intent: q}\n    frequency: 0.5\n    damage: 1\n")            # s 0.3: n_min 576
P, Q = {"intent": "p"}, {"intent": "q"}
ROUTING = [1, 1, 1, 1, 1, 1, 0, 0]
OUTPUT = [0.5] * 8
GUARD = [0.5, 0, 0, 0, 0, 0, 0, 0]


def new_units():
    us = []
    for i in range(8):
        trips = [("specialist.market_data_analysis.empty", "needs_review",
                  [ev("payload: {} | empty\nsecond line", f"s-{i}")])]
        if ROUTING[i]:
            trips.append(("routing.skill_missing", "fail", [ev("SKILL LOADS: (none)", f"r-{i}")]))
        if GUARD[i]:
            trips.append(("guardrail.leaky_response", "needs_review", [ev("leaked 238.41", None, "answer")]))
        us.append(unit(f"P{i}", labels=P, trips=trips))
    us += [unit(f"Q{i}", labels=Q, trips=[("routing.skill_missing", "fail", [ev("x")])]) for i in range(3)]
    return us


def base_units():
    return [unit(f"P{i}", labels=P) for i in range(8)] + [unit(f"Q{i}", labels=Q) for i in range(3)]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = plan(tmp_path_factory.mktemp("plan"), PLAN)
    new = score(results(new_units(), run_id="2026-12-02/090000"), CATALOG, p)
    base = score(results(base_units(), run_id="2026-12-01/090000"), CATALOG, p, mode="B")
    return new, base


@pytest.mark.parametrize("k,z", [(1, 2.0), (10, 3.1513), (100, 4.3026)])
def test_z(k, z):
    assert z_critical(k) == pytest.approx(z, abs=5e-5)
    assert z_critical(k) == 2 + math.log(k) / 2


def test_z_is_stricter_than_bonferroni_for_every_k():
    for k in range(1, 10_001):
        assert z_critical(k) > NormalDist().inv_cdf(1 - 0.025 / k), k


def test_only_scored_cells_with_se_are_compared(pair):
    comp = compare(*pair)
    assert comp.k == 3                                   # P × 3 categories; Q is under-populated
    assert {(c.partition, c.category) for c in comp.cells} == {
        ("intent=p,provenance=synthetic", x) for x in ("routing", "output", "guard")}
    assert comp.skipped == 3
    assert comp.z == pytest.approx(2 + math.log(3) / 2)


def test_intervals_and_findings_ordered_by_lower_bound_not_delta(pair):
    comp = compare(*pair)
    z = 2 + math.log(3) / 2
    cells = {c.category: c for c in comp.cells}
    se_r = np.std(ROUTING, ddof=1) / math.sqrt(8)
    r = cells["routing"]
    assert r.delta == 0.75 and r.se_new == pytest.approx(se_r) and r.se_base == 0.0
    assert r.se_delta == pytest.approx(math.sqrt(se_r ** 2 + 0))
    assert r.ci_low == pytest.approx(0.75 - z * se_r) and r.ci_high == pytest.approx(0.75 + z * se_r)
    o = cells["output"]
    assert (o.delta, o.se_delta, o.ci_low, o.ci_high) == (0.5, 0.0, 0.5, 0.5)
    g = cells["guard"]
    se_g = np.std(GUARD, ddof=1) / math.sqrt(8)
    assert g.delta == 0.0625 and g.ci_low == pytest.approx(0.0625 - z * se_g) and not g.finding
    # by delta routing (0.75) would come first; by lower bound output (0.5 > 0.333) does
    assert r.ci_low == pytest.approx(0.3328, abs=1e-4)
    assert [c.category for c in comp.findings] == ["output", "routing"]
    assert sorted(comp.findings, key=lambda c: -c.delta)[0].category == "routing"


def test_extra_columns(pair):
    comp = compare(*pair)
    r = next(c for c in comp.cells if c.category == "routing")
    assert r.detectable_effect == pytest.approx(0.05 + (comp.z + 0.8416212335729143) * r.se_delta, rel=1e-12)
    assert r.paired_n == 8 and r.paired_delta == pytest.approx(0.75)
    assert r.paired_se == pytest.approx(np.std(ROUTING, ddof=1) / math.sqrt(8))
    data = comp.to_json("v1")
    assert data["k"] == 3 and data["cells"][0]["z"] == comp.z and "paired" in data["cells"][0]
    assert data["finding_order"] == [["intent=p,provenance=synthetic", "output"],
                                     ["intent=p,provenance=synthetic", "routing"]]


def test_paired_se_uses_per_unit_differences(tmp_path):
    p = plan(tmp_path, PLAN)
    base_vals, new_vals = [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]

    def units(vals):
        return [unit(f"P{i}", labels=P, trips=[("routing.skill_missing", "fail", [ev("x")])] if v else [])
                for i, v in enumerate(vals)]
    new = score(results(units(new_vals)), CATALOG, p)
    base = score(results(units(base_vals)), CATALOG, p, mode="B")
    r = next(c for c in compare(new, base).cells if c.category == "routing")
    assert r.delta == 0.5 and r.se_delta == pytest.approx(np.std(base_vals, ddof=1) / math.sqrt(8))
    diffs = np.array(new_vals) - np.array(base_vals)
    assert r.paired_se == pytest.approx(np.std(diffs, ddof=1) / math.sqrt(8))
    assert r.paired_ci_low == pytest.approx(0.5 - compare(new, base).z * r.paired_se)


def test_unterbelegt_cell_with_huge_delta_is_not_listed(pair):
    new, base = pair
    q = new.partition("intent=q,provenance=synthetic").json["by_category"]["routing"]
    assert q["status"] == "unterbelegt" and q["loss"] == 1.0
    assert all(c.partition != "intent=q,provenance=synthetic" for c in compare(new, base).findings)


def test_ties_are_broken_by_partition_then_category(tmp_path):
    c2 = catalog([cat("zeta", 0.5, ["specialist.*"]), cat("alpha", 0.5, ["specialist.*"])])
    p = plan(tmp_path, PLAN + "    s: 0\n")   # q with n_min 2 too
    trips = [("specialist.market_data_analysis.empty", "fail", [ev("empty", "s")])]
    new_us = [unit(f"{x}{i}", labels={"intent": x.lower()}, trips=trips) for x in "QP" for i in range(3)]
    base_us = [unit(f"{x}{i}", labels={"intent": x.lower()}) for x in "QP" for i in range(3)]
    comp = compare(score(results(new_us), c2, p), score(results(base_us), c2, p, mode="B"))
    assert [(c.partition[:8], c.category) for c in comp.findings] == [
        ("intent=p", "alpha"), ("intent=p", "zeta"), ("intent=q", "alpha"), ("intent=q", "zeta")]


def test_no_comparable_cell(tmp_path):
    p = plan(tmp_path, PLAN)
    one = score(results([unit("P0", labels=P)]), CATALOG, p)
    comp = compare(one, one)
    assert comp.k == 0 and comp.z is None and comp.findings == []
