"""When a panel of three decides a question: every mix of votes, by hand.

Each judge gives ``complete`` (c), ``incomplete`` (i), ``abstain`` (a) or no vote (-, a
failed or refused answer). Only a decisive choice of more than half of the panel (two of
three) decides; an abstention never does.
"""
from __future__ import annotations

import json
from itertools import permutations

import pytest
from obai_e2e.judge.panel.aggregate import aggregate, decide
from obai_e2e.judge.panel.responses import validate

from .helpers import make_round, reply

NAMES = {"c": "complete", "i": "incomplete", "a": "abstain", "-": None}
# All 20 mixes of three votes from {c, i, a, -}, with the outcome worked out by hand.
MIXES = {
    "ccc": "complete", "cci": "complete", "cca": "complete", "cc-": "complete",
    "cii": "incomplete", "iii": "incomplete", "iia": "incomplete", "ii-": "incomplete",
    "cia": None, "ci-": None, "caa": None, "ca-": None, "c--": None,
    "iaa": None, "ia-": None, "i--": None,
    "aaa": None, "aa-": None, "a--": None, "---": None,
}


def test_the_table_holds_every_mix_once():
    assert len(MIXES) == 20 and len({"".join(sorted(m)) for m in MIXES}) == 20


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_every_order_of_a_mix_gives_the_same_outcome(mix):
    expected = MIXES[mix]
    for order in set(permutations(mix)):
        majority, decided = decide([NAMES[v] for v in order], 3)
        assert (majority, decided) == (expected, expected is not None), order


def test_a_fourth_judge_without_a_vote_still_counts_towards_the_panel():
    assert decide(["complete", "complete", None, None], 4) == (None, False)  # 2 of 4 is not more than half
    assert decide(["complete", "complete", "complete", "abstain"], 4) == ("complete", True)


@pytest.fixture(scope="module")
def module_round(tmp_path_factory, config_cases):
    from .helpers import copy_run

    run = copy_run(tmp_path_factory.mktemp("majority"))
    return make_round(run, *config_cases)


def _response(rnd, judge: str, choices: dict) -> dict:
    raw = reply(rnd, choices, tag=judge)
    return {"model": f"m-{judge}", "received_at": "2026-01-01T00:00:00Z", "raw_sha256": judge,
            "validation": validate(raw, rnd)}


def test_the_aggregate_of_stored_replies_follows_the_table(module_round):
    rnd = module_round
    # Per unit one mix; a judge without a vote on a unit is a judge whose reply has no entry for it.
    mixes = {"A1": "aai", "MD1": "-cc", "O2": "a-i", "S2": "iia"}
    responses = {}
    for k, judge in enumerate(("J1", "J2", "J3")):
        choices = {u: NAMES[m[k]] for u, m in mixes.items() if m[k] != "-"}
        responses[judge] = _response(rnd, judge, choices)
    # J1 gave no entry for MD1, J2 none for O2: their entries are absent there.
    agg = aggregate(rnd, responses)
    q = {u: agg["units"][u]["questions"]["hub.incomplete_answer"] for u in mixes}
    assert (q["A1"]["votes"], q["A1"]["decided"], q["A1"]["majority"]) == ({"abstain": 2, "incomplete": 1},
                                                                           False, "abstain")
    assert not q["A1"]["trips"] and q["A1"]["majority_loss"] is None
    assert (q["MD1"]["decided"], q["MD1"]["majority"], q["MD1"]["no_vote"]) == (True, "complete", {"J1": "absent"})
    assert (q["O2"]["decided"], q["O2"]["no_vote"]) == (False, {"J2": "absent"})
    assert (q["S2"]["decided"], q["S2"]["majority"], q["S2"]["trips"]) == (True, "incomplete", True)
    json.dumps(agg)  # the aggregate stays plain JSON
