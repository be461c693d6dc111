"""The split of a run over shards: deterministic, complete, balanced, stable when a case is added."""
from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from obai_e2e.base.errors import ConfigError, UsageError
from obai_e2e.run.shard import SLACK, ShardSpec, assign, plan_hash, weights_for

UNITS = [f"C{i}" for i in range(120)] + [f"S{i}.r{k}" for i in range(10) for k in (1, 2, 3)]


def test_every_unit_lands_in_exactly_one_shard_whatever_the_order():
    split = assign(UNITS, 4)
    assert set(split) == set(UNITS) and set(split.values()) == {1, 2, 3, 4}
    shuffled = UNITS[:]
    random.Random(7).shuffle(shuffled)
    assert assign(shuffled, 4) == split


def test_counts_are_balanced_within_the_slack():
    counts = Counter(assign(UNITS, 3).values())
    assert max(counts.values()) <= (1 + SLACK) * len(UNITS) / 3


def test_adding_one_case_moves_no_other_unit_here():
    before = assign(UNITS, 3)
    after = assign(UNITS + ["NEW1"], 3)
    assert sum(before[u] != after[u] for u in UNITS) == 0


def test_latency_weights_bound_the_heaviest_shard():
    weights = {u: random.Random(u).uniform(1, 30) for u in UNITS}
    split = assign(UNITS, 3, weights)
    load = Counter()
    for unit, shard in split.items():
        load[shard] += weights[unit]
    assert max(load.values()) <= (1 + SLACK) * sum(weights.values()) / 3 + 1e-9


def test_one_shard_takes_everything():
    assert set(assign(UNITS, 1).values()) == {1}


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", "2/1001", ""])
def test_bad_shard_specs_are_refused(text):
    with pytest.raises(UsageError, match="--shard"):
        ShardSpec.parse(text)


def test_a_good_shard_spec():
    assert ShardSpec.parse(" 2/3 ") == ShardSpec(2, 3)


def test_weights_come_from_an_earlier_results_file(tmp_path):
    results = {"schema_version": 1, "units": [
        {"unit_id": "A", "latency": {"turn_ms": 2000, "wait_s": 1, "followup_ms": 500}},
        {"unit_id": "B", "latency": {"turn_ms": 1000, "wait_s": None, "followup_ms": None}},
    ]}
    (tmp_path / "results.json").write_text(json.dumps(results))
    weights, source = weights_for(["A", "B", "C"], tmp_path)
    assert weights == {"A": 3.5, "B": 1.0, "C": 2.25}   # C has no latency: the median of A and B
    assert source["known_units"] == 2 and len(source["sha256"]) == 64
    with pytest.raises(ConfigError, match="no results.json"):
        weights_for(["A"], tmp_path / "nowhere")


def test_the_plan_hash_changes_with_anything_the_shards_must_share():
    base = dict(cases_sha256="c" * 64, filters={"smoke": True}, repeats={"A": 1}, units=["A"],
                target_sha256="t" * 64, weights=None)
    h = plan_hash(**base)
    for key, value in (("cases_sha256", "d" * 64), ("filters", {"smoke": False}), ("repeats", {"A": 2}),
                       ("units", ["A", "B"]), ("target_sha256", "u" * 64), ("weights", {"A": 1.0})):
        assert plan_hash(**{**base, key: value}) != h, key
