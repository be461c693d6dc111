"""Pilot estimates of s per partition from several runs, and writing them into the plan."""
import math
from fractions import Fraction

import pytest
import yaml
from obai_e2e.base.paths import bundle_root
from obai_e2e.loss.pilot import PartitionEstimate, estimate, round_up, with_pilot
from obai_e2e.loss.plan import n_min, parse_plan, render_plan_md
from obai_e2e.loss.score import score

from .helpers import ev, plan, results, unit
from .test_compare import CATALOG, PLAN, P, Q
from .test_detect import JUDGED

PK, QK = "intent=p,provenance=synthetic", "intent=q,provenance=synthetic"
TRIP = [("routing.skill_missing", "fail", [ev("x")])]


def run(routing, q_routing=(1, 1), run_id="r"):
    us = [unit(f"P{i}", labels=P, trips=TRIP if v else []) for i, v in enumerate(routing)]
    us += [unit(f"Q{i}", labels=Q, trips=TRIP if v else []) for i, v in enumerate(q_routing)]
    return results(us, run_id=run_id)


@pytest.fixture(scope="module")
def pilot_runs(tmp_path_factory):
    p = plan(tmp_path_factory.mktemp("plan"), PLAN)
    return [score(run([1, 0, 0, 1], run_id="a"), CATALOG, p), score(run([1, 1, 1, 0], run_id="b"), CATALOG, p)]


def test_round_up_is_exact():
    assert round_up(0.1) == Fraction(1, 10)          # not 0.101: the double of 0.1 is a hair above 1/10
    assert round_up(0.5400617248673217) == Fraction(541, 1000)
    assert round_up(0.0) == 0


def test_pooled_spread_per_partition(pilot_runs):
    est = {e.partition: e for e in estimate(pilot_runs)}
    p = est[PK]
    # run a: 1,0,0,1 around 0.5 → Σd² = 1 (3 dof); run b: 1,1,1,0 around 0.75 → Σd² = 0.75 (3 dof)
    # s² = 1.75 / 6 = 0.291667, s = 0.540062; output and guard never trip: 0
    assert p.by_category["routing"] == pytest.approx(math.sqrt(1.75 / 6), rel=1e-12)
    assert p.by_category["output"] == 0 and p.by_category["guard"] == 0
    assert p.s_raw == pytest.approx(0.5400617248673217, rel=1e-12) and p.s == Fraction(541, 1000)
    assert p.units == 8 and p.dof == 6
    # q: both units trip in both runs; no spread, so n_min falls to its floor
    assert est[QK].s == 0
    rms = {e.partition: e for e in estimate(pilot_runs, pool="rms")}[PK]
    assert rms.s_raw == pytest.approx(math.sqrt(1.75 / 6 / 3), rel=1e-12) and rms.s == Fraction(312, 1000)


def test_a_shift_between_runs_is_not_spread(tmp_path):
    p = plan(tmp_path, PLAN)
    runs = [score(run([0, 0, 0, 0]), CATALOG, p), score(run([1, 1, 1, 1]), CATALOG, p)]
    assert {e.partition: e for e in estimate(runs)}[PK].s == 0


def test_a_partition_without_two_units_keeps_its_s(tmp_path):
    p = plan(tmp_path, PLAN)
    runs = [score(run([1, 0], q_routing=(1,)), CATALOG, p)]
    est = {e.partition: e for e in estimate(runs)}
    assert est[QK].s is None and est[PK].s == Fraction(708, 1000)   # √0.5 = 0.70711 → 0.708


def test_model_judged_category_adds_pooled_rater_variance(tmp_path):
    p = plan(tmp_path, PLAN)

    def judged(ratings):
        return results([unit(f"P{i}", labels=P, ratings={"hub.incomplete_answer": r}) for i, r in enumerate(ratings)])
    runs = [score(judged([[1, 0], [0, 0], [1, 1], [0, 0]]), JUDGED, p),    # 0.5, 0, 1, 0; σ_r² = 0.125
            score(judged([[1, 1], [0, 0], [0, 0], [0, 0]]), JUDGED, p)]    # 1, 0, 0, 0;   σ_r² = 0
    est = {e.partition: e for e in estimate(runs)}[PK]
    # s_b² = (0.6875 + 0.75) / 6; σ_r² pooled over 8 double-rated repeats = (4·0.125 + 4·0) / 8 = 0.0625
    assert est.by_category["completeness"] == pytest.approx(math.sqrt(1.4375 / 6 + 0.0625), rel=1e-12)
    assert est.s == Fraction(550, 1000)                              # 0.549621 rounded up


BUNDLED = bundle_root() / "cases" / "plan.yaml"
META = {"runs": ["2026-12-01/100000", "2026-12-01/100500"], "date": "2026-12-01T10:10:00Z", "repeats": 2,
        "pool": "max"}


def test_estimates_are_written_into_the_plan_keeping_the_rest(tmp_path):
    text = BUNDLED.read_text()
    ests = [PartitionEstimate("intent=backtest,provenance=synthetic", Fraction(541, 1000), 0.5400),
            PartitionEstimate("provenance=korpus", Fraction(12, 100), 0.12),
            PartitionEstimate("intent=general,provenance=synthetic", None, None)]
    new = with_pilot(text, ests, META)
    assert new.splitlines()[0] == text.splitlines()[0]                  # the header comment stays
    assert new.count("#") == text.count("#")
    data = yaml.safe_load(new)
    parts = {tuple(sorted(p["labels"].items())): p for p in data["partitions"]}
    assert parts[(("intent", "backtest"),)]["s"] == 0.541
    assert parts[(("provenance", "korpus"),)]["s"] == 0.12
    assert "s" not in parts[(("intent", "general"),)]
    assert data["pilot"] == META
    # every other value is unchanged
    old = yaml.safe_load(text)
    assert {k: v for k, v in data.items() if k not in ("pilot", "partitions")} == \
        {k: v for k, v in old.items() if k not in ("pilot", "partitions")}
    assert [dict(p, s=None) for p in data["partitions"]] == [dict(p, s=None) for p in old["partitions"]]
    path = tmp_path / "plan.yaml"
    path.write_text(new)
    parsed = parse_plan(data, {}, new, str(path), path)
    back = next(p for p in parsed.partitions if p.key == "intent=backtest,provenance=synthetic")
    # the bundled mde is 0.35: 16 · 0.541² / 0.35² = 16 · 0.292681 / 0.1225 = 38.23 → 39
    assert back.s_from_pilot and back.n_min == 39 == n_min("0.541", "0.35")
    assert parsed.pilot["runs"] == META["runs"] and parsed.pool == "max"
    # writing again replaces the pilot block and the s values in place
    again = with_pilot(new, [PartitionEstimate("intent=backtest,provenance=synthetic", Fraction(2, 10), 0.2)],
                       dict(META, runs=["x"], repeats=1))
    data2 = yaml.safe_load(again)
    assert data2["pilot"]["runs"] == ["x"] and again.count("pilot:") == 1
    assert {tuple(sorted(p["labels"].items())): p.get("s") for p in data2["partitions"]}[(("intent", "backtest"),)] == 0.2


def test_plan_md_shows_pilot_and_default_n_min(tmp_path):
    text = with_pilot(BUNDLED.read_text(),
                      [PartitionEstimate("intent=backtest,provenance=synthetic", Fraction(1, 10), 0.1)], META)
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    md = render_plan_md(parse_plan(yaml.safe_load(text), {}, text, str(path), path))
    assert "| partition | frequency | damage | weight | s | s from | n_min | n_min at s = 0.3 |" in md
    # 16 · 0.01 / 0.1225 = 1.31 → 2; the default s: 16 · 0.09 / 0.1225 = 11.76 → 12
    assert "| intent=backtest,provenance=synthetic | 0.12 | 2 | 0.24 | 0.1 | pilot | 2 | 12 |" in md
    assert "Pilot estimates: 2 run(s) of 2026-12-01T10:10:00Z" in md and "pooled by max" in md


def test_pilot_command_from_finished_runs(tmp_path, runs_root, capsys):
    import json

    from obai_e2e.cli import main
    from obai_e2e.report.rows import write_streamed

    from .helpers import write_results

    plan_path = tmp_path / "plan.yaml"
    plan(tmp_path, PLAN)     # writes tmp_path/plan.yaml
    before = plan_path.read_text()
    a, b = runs_root / "2026-12-01" / "100000", runs_root / "2026-12-01" / "100500"
    write_results(a, run([1, 0, 0, 1], run_id="2026-12-01/100000"))
    write_streamed(b, run([1, 1, 1, 0], run_id="2026-12-01/100500"))
    md = tmp_path / "E2E-PLAN.md"
    code = main(["pilot", "--from-runs", str(a), str(b), "--plan", str(plan_path), "--output", str(md),
                 "--dry-run"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "estimated" and plan_path.read_text() == before and not md.exists()
    code = main(["pilot", "--from-runs", str(a), str(b), "--plan", str(plan_path), "--output", str(md)])
    out, err = capsys.readouterr()
    out = json.loads(out)
    assert code == 0 and out["status"] == "piloted"
    p = {x["partition"]: x for x in out["partitions"]}
    # the bundled catalog: routing.skill_missing feeds routing_skills; same spread as above
    assert p[PK]["s"] == 0.541 and p[PK]["s_before"] == 0 and p[PK]["n_min"] == n_min("0.541", "0.05")
    assert p[QK]["s"] == 0 and p[QK]["n_min_before"] == 576 and p[QK]["n_min"] == 2
    assert p[QK]["n_min_at_default_s"] == 576
    assert out["pilot"]["runs"] == ["2026-12-01/100000", "2026-12-01/100500"] and out["pilot"]["repeats"] == 2
    data = yaml.safe_load(plan_path.read_text())
    assert data["pilot"]["runs"] == out["pilot"]["runs"] and data["partitions"][0]["s"] == 0.541
    assert "n_min at s = 0.3" in md.read_text() and "intent=q,provenance=synthetic: s 0.3 → 0, n_min 576 → 2" in err


def test_pilot_command_refuses_a_run_without_results(tmp_path, capsys):
    import json

    from obai_e2e.cli import main

    plan(tmp_path, PLAN)
    (tmp_path / "empty").mkdir()
    code = main(["pilot", "--from-runs", str(tmp_path / "empty"), "--plan", str(tmp_path / "plan.yaml")])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and "results file not found" in out["message"]


def test_a_suppressed_partition_of_a_run_is_left_out(tmp_path):
    p = plan(tmp_path, PLAN)
    aborted = run([1, 0, 0, 1], run_id="x")
    for u in aborted["units"][:2]:
        u["verdict"] = "inconclusive"          # 2 of 4 aborted: the partition is suppressed in this run
    runs = [score(aborted, CATALOG, p), score(run([1, 1, 1, 0]), CATALOG, p)]
    assert runs[0].partition(PK).json["status"] == "suppressed"
    est = {e.partition: e for e in estimate(runs)}[PK]
    # only run b: 1,1,1,0 → s² = 0.75 / 3 = 0.25, s = 0.5
    assert est.s == Fraction(1, 2) and est.dof == 3
