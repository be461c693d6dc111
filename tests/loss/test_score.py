"""suite.json from results data, checked against values computed by hand (numpy, written out).

The per-repeat losses below are derived from the rules each unit trips (see units()),
independently of the implementation: routing (max 1), output (max 2, codes counted once,
fail 1 / needs_review 0.5), completeness (model_judged: mean of non-null ratings, else the
yes/no answer, else unbewertbar). The total L per repeat is Σ w·loss / Σ w over the
categories scored in that repeat, with weights 0.5 / 0.3 / 0.2.
"""
import json
import math

import numpy as np
import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.base.fsutil import dumps_json
from obai_e2e.loss.score import check_suite, score

from .helpers import cat, catalog, ev, plan, results, unit

CATALOG = catalog([
    cat("routing", 0.5, ["routing.*"]),
    cat("output", 0.3, ["specialist.*", "hub.unverified_number:*"], max_=2),
    cat("completeness", 0.2, ["hub.incomplete_answer"], "model_judged"),
])
PLAN = ("mde: 0.05\npartitions:\n"
        "  - labels: {intent: a}\n    frequency: 0.4\n    damage: 1\n    s: 0.02\n"   # n_min 3
        "  - labels: {intent: b}\n    frequency: 0.2\n    damage: 1\n    s: 0.05\n"   # n_min 16
        "  - labels: {intent: c}\n    frequency: 0.2\n    damage: 1\n    s: 0\n"      # n_min 2
        "  - labels: {intent: d}\n    frequency: 0.1\n    damage: 2\n    s: 0\n"      # n_min 2
        "  - labels: {intent: a, provenance: korpus}\n    frequency: 0.1\n    damage: 1\n    s: 0\n")
A, B, C, D = ({"intent": x, "channel": "cli"} for x in "abcd")
FAIL_R = ("routing.skill_missing", "fail", [ev("SKILL LOADS: (none)", "s-1")])


def units():
    u = []
    # partition a: four units, 3 + 1 + 2 + 1 repeats
    u.append(unit("A1.r1", repeat=1, labels=A, trips=[FAIL_R, ("specialist.market_data_analysis.empty", "fail", []),
                                                     ("hub.unverified_number:12", "needs_review", [])],
                  ratings={"hub.incomplete_answer": [1, 0]}))
    u.append(unit("A1.r2", repeat=2, labels=A, ratings={"hub.incomplete_answer": [0, 0]}))
    u.append(unit("A1.r3", repeat=3, labels=A, trips=[("routing.unexpected_specialist", "needs_review", []),
                                                     (["hub.unverified_number:1", "hub.unverified_number:2"],
                                                      "needs_review", [])],
                  answers={"hub.incomplete_answer": "no"}))
    u.append(unit("A2", labels=A, ratings={"hub.incomplete_answer": [1, None, 1]}))
    u.append(unit("A3.r1", repeat=1, labels=A, trips=[("routing.specialist_missing", "fail", []),
                                                     ("routing.unexpected_specialist", "needs_review", [])],
                  ratings={"hub.incomplete_answer": [None, None]}))
    u.append(unit("A3.r2", repeat=2, labels=A, trips=[("routing.sequence_violation", "fail", [])],
                  answers={"hub.incomplete_answer": "yes"}))
    u.append(unit("A4", labels=A, trips=[("routing.unexpected_specialist", "needs_review", [])],
                  ratings={"hub.incomplete_answer": [1, 0, 0]}))
    # partition b: three units, under-populated (n_min 16)
    u += [unit("B1", labels=B, trips=[FAIL_R]), unit("B2", labels=B), unit("B3", labels=B)]
    # partition c: 2 of 10 aborted (20 %): suppressed
    u += [unit(f"C{i}", labels=C, trips=[FAIL_R]) for i in range(8)]
    u += [unit(f"C{i}", labels=C, verdict="inconclusive") for i in (8, 9)]
    # partition d: 1 of 10 aborted (exactly 10 %): still scored; one unit not judged
    u += [unit(f"D{i}", labels=D) for i in range(9)]
    u += [unit("D9", labels=D, verdict="inconclusive"), unit("D10", labels=D, verdict="not_judged")]
    # korpus units of intent a: their own partition
    u += [unit("K1", labels=A, provenance="korpus", trips=[FAIL_R]), unit("K2", labels=A, provenance="korpus")]
    # a unit no partition declares
    u.append(unit("Z1", labels={"intent": "z"}))
    return u


# The per-repeat losses of partition a, by unit, written out from the trips above.
ROUTING = {"A1": [1, 0, 0.5], "A2": [0], "A3": [1, 1], "A4": [0.5]}
OUTPUT = {"A1": [1.5 / 2, 0, 1.0 / 2], "A2": [0], "A3": [0, 0], "A4": [0]}
COMPLETE = {"A1": [0.5, 0, 1], "A2": [1], "A3": [0], "A4": [1 / 3]}      # A3.r1: all judges abstained
TOTAL = {"A1": [(0.5 * 1 + 0.3 * 0.75 + 0.2 * 0.5) / 1.0, 0.0, (0.5 * 0.5 + 0.3 * 0.5 + 0.2 * 1) / 1.0],
         "A2": [0.2 * 1 / 1.0], "A3": [(0.5 * 1 + 0.3 * 0) / 0.8, (0.5 * 1 + 0.2 * 0) / 1.0],
         "A4": [(0.5 * 0.5 + 0.2 / 3) / 1.0]}
# ratings of the repeats with two or more non-null ratings: A1.r1, A1.r2, A2, A4
DOUBLE = [[1, 0], [0, 0], [1, 1], [1, 0, 0]]


def expected_cell(per_unit: dict, rater_var: float = 0.0) -> dict:
    means = np.array([np.mean(v) for v in per_unit.values()])
    n = len(means)
    sb = np.std(means, ddof=1)
    multi = [np.array(v) for v in per_unit.values() if len(v) >= 2]
    within = math.sqrt(sum(((v - v.mean()) ** 2).sum() for v in multi) / sum(len(v) - 1 for v in multi))
    se = math.sqrt(sb ** 2 + rater_var) / math.sqrt(n)
    return {"loss": means.mean(), "n": n, "stddev_between": sb, "stddev_within": within, "se": se}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    p = plan(tmp_path_factory.mktemp("plan"), PLAN)
    return score(results(units()), CATALOG, p)


def part(scored, key):
    return next(x for x in scored.suite["partitions"] if x["partition"] == key)


def close(cell: dict, want: dict):
    for k, v in want.items():
        assert cell[k] == pytest.approx(v, rel=1e-12, abs=1e-15), k


def test_deterministic_cells(scored):
    a = part(scored, "intent=a,provenance=synthetic")
    close(a["by_category"]["routing"], expected_cell(ROUTING))
    close(a["by_category"]["output"], expected_cell(OUTPUT))
    # written out: unit means 0.5, 0, 1, 0.5 → mean 0.5, SD sqrt(0.5/3), se = that / 2
    r = a["by_category"]["routing"]
    assert r["loss"] == 0.5 and r["stddev_between"] == pytest.approx(math.sqrt(0.5 / 3))
    assert r["se"] == pytest.approx(math.sqrt(0.5 / 3) / 2)
    # within: A1 repeats (1, 0, .5) around .5 → 0.5 over 2 dof; A3 (1, 1) → 0 over 1 dof
    assert r["stddev_within"] == pytest.approx(math.sqrt(0.5 / 3))
    assert r["status"] == "scored" and a["n_min"] == 3 and r["n"] == 4


def test_rater_variance_two_and_three_raters(scored):
    sigma_r2 = np.mean([np.var(r, ddof=1) for r in DOUBLE])
    assert sigma_r2 == pytest.approx((0.5 + 0 + 0 + 1 / 3) / 4)
    # for two raters the sample variance is (a − b)² / 2: Σ(a−b)²/(2m) over the pairs
    pairs = [r for r in DOUBLE if len(r) == 2]
    assert np.mean([np.var(r, ddof=1) for r in pairs]) == pytest.approx(sum((a - b) ** 2 for a, b in pairs) / (2 * len(pairs)))
    info = scored.suite["raters"]["completeness"]
    assert info == {"rated": 6, "double_rated": 4, "share": pytest.approx(4 / 6),
                    "rater_variance": pytest.approx(sigma_r2)}
    a = part(scored, "intent=a,provenance=synthetic")
    c = a["by_category"]["completeness"]
    close(c, expected_cell(COMPLETE, sigma_r2))
    # stddev_between stays the spread of the unit means; the rater variance enters se only
    assert c["stddev_between"] == pytest.approx(np.std([np.mean(v) for v in COMPLETE.values()], ddof=1))
    assert c["rater_variance"] == pytest.approx(sigma_r2)


def test_partition_total(scored):
    a = part(scored, "intent=a,provenance=synthetic")
    want = expected_cell(TOTAL)
    for k in ("loss", "stddev_between", "stddev_within", "se"):
        assert a[k] == pytest.approx(want[k], rel=1e-12), k
    assert a["n"] == 4 and a["status"] == "scored" and a["coverage"] == 1.0 and a["abort_rate"] == 0.0
    assert a["weight"] == pytest.approx(0.4)


def test_under_populated_cell_is_reported(scored):
    b = part(scored, "intent=b,provenance=synthetic")
    r = b["by_category"]["routing"]
    assert r["status"] == "unterbelegt" and r["n"] == 3 and b["n_min"] == 16
    assert r["loss"] == pytest.approx(1 / 3)
    assert r["se"] == pytest.approx(np.std([1, 0, 0], ddof=1) / math.sqrt(3))
    assert b["status"] == "unterbelegt"
    assert b["by_category"]["completeness"]["status"] == "unbewertbar"   # nobody rated it: never 0
    assert b["by_category"]["completeness"]["loss"] is None


def test_abort_rate_above_ten_percent_suppresses(scored):
    c = part(scored, "intent=c,provenance=synthetic")
    assert c["abort_rate"] == pytest.approx(0.2) and c["status"] == "suppressed"
    assert c["loss"] is None and c["se"] is None
    assert all(x["status"] == "suppressed" and x["loss"] is None for x in c["by_category"].values())
    assert "fix the harness" in c["message"]
    assert any("intent=c" in w and "fix the harness" in w for w in scored.suite["warnings"])
    d = part(scored, "intent=d,provenance=synthetic")
    assert d["abort_rate"] == pytest.approx(0.1) and d["status"] == "scored"   # 10 % is not above 10 %
    assert d["coverage"] == pytest.approx(9 / 11) and d["planned"] == 11


def test_se_is_null_for_a_single_unit(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n    s: 0\n")
    s = score(results([unit("A1", labels=A, trips=[FAIL_R])]), CATALOG, p)
    r = s.suite["partitions"][0]["by_category"]["routing"]
    assert r["n"] == 1 and r["loss"] == 1.0 and r["se"] is None and r["stddev_between"] is None
    assert r["status"] == "unterbelegt"   # n_min is at least 2


def test_korpus_and_synthetic_aggregate_separately(scored):
    k = part(scored, "intent=a,provenance=korpus")
    assert k["n"] == 2 and k["by_category"]["routing"]["loss"] == 0.5
    a = part(scored, "intent=a,provenance=synthetic")
    assert a["n"] == 4   # the korpus units of intent a are not in here
    suite = scored.suite
    assert suite["provenance"] == "mixed" and suite["suite_score"] is None
    synthetic = (0.4 * a["loss"] + 0.2 * part(scored, "intent=b,provenance=synthetic")["loss"]
                 + 0.2 * part(scored, "intent=d,provenance=synthetic")["loss"]) / 0.8
    assert suite["suite_scores"]["synthetic"] == pytest.approx(synthetic)
    assert suite["suite_scores"]["korpus"] == pytest.approx(k["loss"])
    assert any("mixed run" in w for w in suite["warnings"])


def test_suite_figures(scored):
    s = scored.suite
    assert s["counts"] == {"planned": 34, "completed": 30, "aborted": 3, "outage": 0, "not_judged": 1, "units": 31}
    assert s["completion_rate"] == pytest.approx(30 / 34)
    assert s["abort_rate"] == pytest.approx(3 / 33)
    # covered: a (n 4 ≥ 3), c (8 ≥ 2), d (9 ≥ 2), korpus (2 ≥ 2); not b (3 < 16)
    assert s["coverage"] == pytest.approx((0.4 + 0.2 + 0.2 + 0.1) / 1.1)
    assert s["sample_budget"] == 3 + 16 + 2 + 2 + 2
    assert s["mde"] == 0.05 and s["mode"] == "A" and s["catalog_version"] == "v1"
    z = part(scored, "unassigned")
    assert z["weight"] == 0 and z["unassigned"] and z["n"] == 1
    assert any("match no partition" in w and "Z1" in w for w in s["warnings"])


def test_suite_json_schema_and_deterministic_bytes(scored, tmp_path):
    check_suite(scored.suite, "suite.json")
    p = plan(tmp_path, PLAN)
    again = score(results(list(reversed(units()))), CATALOG, p)
    assert dumps_json(again.suite) == dumps_json(scored.suite)
    with pytest.raises(ConfigError, match="expected object"):
        check_suite(0.18, "suite.json")
    bare = {k: v for k, v in scored.suite.items() if k != "partitions"}
    with pytest.raises(ConfigError, match="'partitions' is required"):
        check_suite(bare, "suite.json")
    empty = json.loads(dumps_json(scored.suite))
    empty["partitions"] = []
    with pytest.raises(ConfigError, match="field /partitions"):
        check_suite(empty, "suite.json")


def test_zero_spread_snaps_to_zero(tmp_path):
    # 0.1 three times: the float mean is 0.1 + 1.4e-17 and the raw SD 1.7e-17; reported as 0.
    xs = [0.1] * 3
    m = math.fsum(xs) / 3
    assert m != 0.1 and math.sqrt(math.fsum((x - m) ** 2 for x in xs) / 2) > 0
    p = plan(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n    s: 0\n")
    us = [unit(f"A{i}", labels=A, ratings={"hub.incomplete_answer": [0.1]}) for i in range(3)]
    us += [unit(f"R.r{k}", repeat=k, labels=A, ratings={"hub.incomplete_answer": [0.1]}) for k in (1, 2, 3)]
    c = score(results(us), CATALOG, p).suite["partitions"][0]["by_category"]["completeness"]
    assert c["stddev_between"] == 0.0 and c["se"] == 0.0 and c["stddev_within"] == 0.0


def test_mode_b_marks_needs_execution_unbewertbar(tmp_path):
    c = catalog([cat("retry", 0.3, ["trace.error_span:*"], needs_execution=True), cat("routing", 0.7, ["routing.*"])])
    p = plan(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n    s: 0\n")
    data = results([unit(f"A{i}", labels=A, trips=[("trace.error_span:hub", "fail", [])]) for i in range(3)])
    a = score(data, c, p).suite
    assert a["partitions"][0]["by_category"]["retry"]["loss"] == 1.0
    b = score(data, c, p, mode="B").suite
    cell = b["partitions"][0]["by_category"]["retry"]
    assert cell["status"] == "unbewertbar" and cell["loss"] is None and cell["n"] == 0
    assert b["mode"] == "B" and b["partitions"][0]["loss"] == 0.0
    assert any("need execution" in w for w in b["warnings"])


def test_suite_abort_rate_above_limit_withholds_the_suite_score(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n    s: 0\n"
                       "  - labels: {intent: b}\n    frequency: 1\n    damage: 1\n    s: 0\n")
    us = [unit(f"A{i}", labels=A) for i in range(9)] + [unit("A9", labels=A, verdict="inconclusive")]
    us += [unit(f"B{i}", labels=B) for i in range(7)] + [unit(f"B{i}", labels=B, verdict="inconclusive") for i in (7, 8)]
    s = score(results(us), CATALOG, p).suite
    assert s["abort_rate"] == pytest.approx(3 / 19) and s["suite_status"] == "suppressed"
    assert s["suite_score"] is None and s["suite_scores"] == {"synthetic": None}
    assert s["partitions"][0]["status"] == "scored"        # 1 of 10: its own score stands


def test_a_run_without_units_is_unbewertbar_not_zero(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n")
    s = score(results([], provenance="mixed"), CATALOG, p).suite
    check_suite(s, "suite.json")
    assert s["suite_score"] is None and s["suite_status"] == "unbewertbar" and s["completion_rate"] is None
    assert s["partitions"][0]["status"] == "unbewertbar" and s["partitions"][0]["loss"] is None
