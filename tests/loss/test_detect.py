"""The detectable effect per cell and partition, and the paired se with rater variance, against hand computations."""
import json
import math
from statistics import NormalDist

import pytest
from obai_e2e.loss.compare import compare
from obai_e2e.loss.detect import POWER_Z
from obai_e2e.loss.reports import top_regressions_md
from obai_e2e.loss.score import check_suite, score

from .helpers import cat, catalog, ev, plan, results, unit
from .test_compare import CATALOG, PLAN, P, base_units, new_units

PK, QK = "intent=p,provenance=synthetic", "intent=q,provenance=synthetic"
Z3 = 2 + math.log(3) / 2                  # three listable cells
# routing in the new run: unit losses 1,1,1,1,1,1,0,0; mean 0.75;
# s² = (6·0.25² + 2·0.75²) / 7 = 1.5 / 7 = 3/14; se² = s²/8 = 3/112
SE_ROUTING = math.sqrt(3 / 112)
# guard: 0.5 and seven 0; mean 0.0625; s² = (0.4375² + 7·0.0625²) / 7 = 0.21875 / 7 = 1/32; se² = 1/256
SE_GUARD = 1 / 16


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = plan(tmp_path_factory.mktemp("plan"), PLAN)
    new = score(results(new_units(), run_id="2026-12-02/090000"), CATALOG, p)
    base = score(results(base_units(), run_id="2026-12-01/090000"), CATALOG, p, mode="B")
    return new, base


def test_power_quantile():
    assert POWER_Z == pytest.approx(0.8416212335729143, abs=1e-15)


def test_detectable_effect_of_a_compared_cell(pair):
    comp = compare(*pair)
    assert comp.z == pytest.approx(Z3)
    r = next(c for c in comp.cells if c.category == "routing")
    assert r.se_delta == pytest.approx(SE_ROUTING, rel=1e-12)          # the baseline has no spread
    # 0.05 + (2.549306 + 0.841621) · 0.163663 = 0.604971
    assert r.detectable_effect == pytest.approx(0.6049707637627434, rel=1e-12)
    # what the figure means: a true delta of that size is listed with probability 0.8
    listed = 1 - NormalDist(r.detectable_effect, r.se_delta).cdf(0.05 + comp.z * r.se_delta)
    assert listed == pytest.approx(0.8, abs=1e-12)
    o = next(c for c in comp.cells if c.category == "output")
    assert o.se_delta == 0 and o.detectable_effect == 0.05          # no spread: anything above the mde


def test_detectable_effect_in_suite_json(pair):
    new, _ = pair
    check_suite(new.suite, "suite.json")
    d = new.suite["detection"]
    assert d["k"] == 3 and d["z"] == pytest.approx(Z3) and d["power"] == 0.8
    p = next(x for x in new.suite["partitions"] if x["partition"] == PK)
    cells = p["by_category"]
    # against a like-for-like baseline: se_delta = √2·se
    # routing: 0.05 + 3.390927 · √2 · 0.163663 = 0.834847; guard: 0.05 + 3.390927 · √2 / 16 = 0.349718
    assert cells["routing"]["detectable_effect"] == pytest.approx(0.8348471808338267, rel=1e-12)
    assert cells["guard"]["detectable_effect"] == pytest.approx(0.3497184679286421, rel=1e-12)
    assert cells["output"]["detectable_effect"] == 0.05
    assert all(c["needs_units"] == 0 for c in cells.values())
    assert p["detectable_effect"] == cells["routing"]["detectable_effect"]      # the worst category
    # one figure per category, none for the partition as a whole
    assert p["needs_units"] == 0 and p["detection"] == ("can detect regressions of guard ≥ 0.3497, output ≥ 0.0500, "
                                                        "routing ≥ 0.8348")
    q = next(x for x in new.suite["partitions"] if x["partition"] == QK)
    # s = 0.3, mde = 0.05: n_min = 16 · 0.09 / 0.0025 = 576; three units present
    assert q["n_min"] == 576 and q["n"] == 3
    assert q["needs_units"] == 573 and q["detection"] == "needs 573 more units"
    assert q["detectable_effect"] is None
    assert q["by_category"]["routing"]["needs_units"] == 573 and q["by_category"]["routing"]["detectable_effect"] is None


def test_partition_sentences_in_the_comparison_and_top_regressions(pair):
    new, base = pair
    comp = compare(new, base)
    by = {p["partition"]: p for p in comp.partitions}
    assert by[PK]["text"] == "can detect regressions of guard ≥ 0.2619, output ≥ 0.0500, routing ≥ 0.6050"
    assert by[PK]["compared_cells"] == 3
    assert by[QK]["text"] == "needs 573 more units" and by[QK]["needs_units"] == 573
    text, _ = top_regressions_md(comp, new)
    assert "## What each partition can detect" in text
    assert ("- intent=p,provenance=synthetic: can detect regressions of guard ≥ 0.2619, output ≥ 0.0500, routing ≥ "
            "0.6050 (n = 8, baseline n = 8, n_min = 2)") in text.replace("\\", "")
    assert "intent=q,provenance=synthetic: needs 573 more units" in text.replace("\\", "")
    data = comp.to_json("v1")
    assert data["power"] == 0.8 and [p["partition"] for p in data["partitions"]] == [PK, QK]


def test_a_short_baseline_is_named(tmp_path):
    p = plan(tmp_path, PLAN)
    new = score(results(new_units()), CATALOG, p)
    base = score(results(base_units()[:1] + base_units()[8:]), CATALOG, p, mode="B")   # one P unit
    comp = compare(new, base)
    by = {x["partition"]: x for x in comp.partitions}
    assert by[PK]["text"] == "the baseline: needs 1 more unit" and by[PK]["baseline_needs_units"] == 1


JUDGED = catalog([cat("routing", 0.8, ["routing.*"]), cat("completeness", 0.2, ["hub.incomplete_answer"],
                                                               "model_judged")])
NEW_RATINGS = [[1, 0], [1, 1], [0, 0], [1, 1]]     # unit losses 0.5, 1, 0, 1
BASE_RATINGS = [[0, 0], [1, 0], [0, 0], [0, 1]]    # unit losses 0, 0.5, 0, 0.5


def judged_run(ratings):
    return results([unit(f"P{i}", labels=P, ratings={"hub.incomplete_answer": r},
                         trips=[("routing.skill_missing", "fail", [ev("x")])] if i % 2 else [])
                    for i, r in enumerate(ratings)])


def test_paired_se_of_a_model_judged_cell_includes_both_rater_variances(tmp_path):
    p = plan(tmp_path, PLAN)
    new = score(judged_run(NEW_RATINGS), JUDGED, p)
    base = score(judged_run(BASE_RATINGS), JUDGED, p, mode="B")
    # rater variance: mean of (a − b)²/2 over the double-rated repeats
    # new: 0.5, 0, 0, 0 → 0.125; base: 0, 0.5, 0, 0.5 → 0.25
    assert new.suite["raters"]["completeness"]["rater_variance"] == 0.125
    assert base.suite["raters"]["completeness"]["rater_variance"] == 0.25
    comp = compare(new, base)
    c = next(x for x in comp.cells if x.category == "completeness")
    # differences 0.5, 0.5, 0, 0.5: mean 0.375, σ_d² = (3 · 0.125² + 0.375²) / 3 = 0.1875 / 3 = 0.0625
    # se = √(0.0625 + 0.125 + 0.25) / √4 = √0.4375 / 2 = 0.330719
    assert c.paired_n == 4 and c.paired_delta == 0.375
    assert c.paired_se == pytest.approx(0.33071891388307384, rel=1e-12)
    assert c.paired_rater_variance == 0.375
    assert c.paired_ci_low == pytest.approx(0.375 - comp.z * 0.33071891388307384, rel=1e-12)
    # a deterministic cell keeps the bare spread of the differences: routing is identical on both sides
    r = next(x for x in comp.cells if x.category == "routing")
    assert r.paired_se == 0 and r.paired_rater_variance is None
    assert comp.to_json("v1")["cells"][1]["paired"]["rater_variance"] == 0.375


def test_comparison_json_is_schema_checked(pair, tmp_path):
    from obai_e2e.base import schema
    from obai_e2e.base.errors import ConfigError
    from obai_e2e.loss.reports import write_comparison

    new, base = pair
    comp = compare(new, base)
    write_comparison(tmp_path / "comparison.json", comp, new, [])
    data = comp.to_json("v1")
    del data["cells"][0]["detectable_effect"]
    with pytest.raises(ConfigError, match="field /cells/0: 'detectable_effect' is required"):
        schema.check(data, "comparison.v1.schema.json", source="comparison.json")


def test_the_html_view_shows_the_detection_figures(pair, tmp_path):
    from obai_e2e.report.html_inputs import read_comparison
    from obai_e2e.report.html_loss import loss_view

    new, base = pair
    comp = compare(new, base)
    (tmp_path / "comparison.json").write_text(json.dumps(comp.to_json("v1")))
    view = loss_view(json.loads(json.dumps(new.suite)), [], read_comparison(tmp_path / "comparison.json"))
    by = {p["labels"]: p for p in view["partitions"]}
    assert view["detects_against"].startswith("the baseline (")
    # per category the comparison's own figure (against the real baseline), and only there
    assert by[PK]["by_category"] == ["guard: loss 0.0625 · detects ≥ 0.2619", "output: loss 0.5 · detects ≥ 0.0500",
                                     "routing: loss 0.75 · detects ≥ 0.6050"]
    assert "detects" not in by[PK] and "can detect" not in json.dumps(view["partitions"])
    # an under-populated partition says once what it lacks; its categories in the same state show their loss
    assert by[QK]["by_category"] == ["guard: loss 0", "output: loss 0", "routing: loss 1"]
    assert by[QK]["status"] == "under-populated" and by[QK]["thin"] and by[QK]["needs"] == "needs 573 more units"
    alone = loss_view(json.loads(json.dumps(new.suite)), None, None)     # no baseline: suite.json's own figures
    alone_by = {p["labels"]: p for p in alone["partitions"]}
    assert alone["detects_against"] == "a like-for-like run"
    assert "routing: loss 0.75 · detects ≥ 0.8348" in alone_by[PK]["by_category"]
