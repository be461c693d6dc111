"""Stratified sampling: up to n_min per partition, deterministic, thin partitions flagged, repeats."""
from obai_e2e.config.cases import Case, load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.loss.plan import load_plan
from obai_e2e.loss.sampling import sample

from .helpers import plan


def case(cid, intent, *, provenance="synthetic", stochastic=False, repeats=1, disabled=False):
    return Case(id=cid, feature="f", query="q", labels={"intent": intent}, provenance=provenance,
                stochastic=stochastic, repeats=repeats, disabled=disabled)


BODY = ("mde: 0.05\nseed: test\npartitions:\n"
        "  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n    s: 0.02\n"      # n_min 3
        "  - labels: {intent: b}\n    frequency: 1\n    damage: 1\n    s: 0.05\n"      # n_min 16
        "  - labels: {provenance: korpus}\n    frequency: 1\n    damage: 1\n    s: 0\n")  # n_min 2


def test_up_to_n_min_thin_flagged_and_repeats(tmp_path):
    p = plan(tmp_path, BODY)
    pool = ([case(f"A{i}", "a") for i in range(10)] + [case("B1", "b", stochastic=True, repeats=5),
            case("B2", "b", stochastic=True, repeats=3), case("B3", "b"), case("B4", "b", disabled=True)]
            + [case("K1", "a", provenance="korpus"), case("C1", "c")])
    s = sample(p, pool)
    parts = {x.key: x for x in s.partitions}
    a = parts["intent=a,provenance=synthetic"]
    assert a.n_min == 3 and a.available == 10 and len(a.selected) == 3 and not a.thin
    b = parts["intent=b,provenance=synthetic"]
    assert b.available == 3 and set(b.selected) == {"B1", "B2", "B3"} and b.thin   # disabled B4 is not drawn
    assert b.to_json()["shortfall"] == 13
    assert parts["provenance=korpus"].selected == ("K1",)
    reps = {u["case_id"]: u["repeats"] for u in s.units}
    assert reps["B1"] == 5 and reps["B2"] == 3 and reps["B3"] == 1 and reps["K1"] == 1
    assert s.unassigned == ("C1",)
    assert s.planned_executions == 3 + 5 + 3 + 1 + 1


def test_deterministic_and_seeded(tmp_path):
    pool = [case(f"A{i}", "a") for i in range(30)]
    first = sample(plan(tmp_path, BODY), pool)
    again = sample(plan(tmp_path, BODY), list(reversed(pool)))
    assert first.to_json() == again.to_json()
    other = sample(plan(tmp_path, BODY.replace("seed: test", "seed: other")), pool)
    assert other.partitions[0].selected != first.partitions[0].selected


def test_stochastic_case_gets_at_least_three_repeats(tmp_path):
    # A stochastic case declared with fewer repeats is still sampled with 3.
    s = sample(plan(tmp_path, BODY), [case("A1", "a", stochastic=True, repeats=2)])
    assert s.units == ({"case_id": "A1", "repeats": 3},)


def test_bundled_cases_and_plan():
    config = load_target_config()
    cases = load_cases_for(config)
    s = sample(load_plan(), cases.cases)
    assert all(x.thin for x in s.partitions)  # 46 cases cannot fill n_min = 576 anywhere
    # The judged-fault cases (a demo fault each that only a judge sees) are in no partition:
    # never sampled, never part of the loss.
    judged = {c.id for c in cases.cases if c.labels.get("intent") == "judged_fault"}
    assert judged == {f"JC{i}" for i in range(1, 5)} | {f"JF{i}" for i in range(1, 5)}
    assert {u["case_id"] for u in s.units} == {c.id for c in cases.cases if not c.disabled} - judged
    assert {key.split(".")[0] for key in s.unassigned} == judged
