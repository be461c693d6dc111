"""The fault matrix end to end: every fault gives exactly its verdict and code, clean cases no false fail.

One headless run against the local store, every fault but ``hang`` switched on, each
scoped (``fault@query text``) to the one case it targets (``recorded/matrix.py`` is the
table), beside a clean case of every feature, chosen so that every rubric rule passes on
one of them. That a targeted case passes clean, and passes the very rule its fault trips,
is checked on its recording (tests/judge/rubric/test_rules.py), as is every clean unit of
the suite; ``recorded/record.py`` records them again from the demo.

A hang costs one whole target timeout: test_run_one.py drives it (killed with its process
group, ``cli_timeout``), the exit code of an inconclusive run is shown by
test_hostile_runs.py, and the hang's verdict is checked on its recording (tests/judge).

The same runs show what driving a unit must produce: a trace found by tag, an async job
followed up in its session, a refusal, a trace per unit when units run in parallel, and
trace_not_found / multi_match with their evidence. Rules are checked one by one, fast,
on recorded packets (tests/judge); this module shows they hold on the live demo.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from obai_e2e.base.errors import Exit
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.report.results import load_results
from obai_e2e.run import headless
from recorded.matrix import MATRIX, RULES, spec

from .conftest import target_variant

# A run of the whole suite's size: minutes on a quiet machine, several times that on a busy
# one. The limit only stops a hang.
pytestmark = [pytest.mark.slow, pytest.mark.heavy(72), pytest.mark.timeout(3600)]

HANG = "hang"
FAULTED = [f for f in MATRIX if f != HANG]
TARGETED = {MATRIX[f].case_id for f in FAULTED}
# Untargeted cases that run clean: one of each feature (K1 a korpus one, M5 with a known
# needs_review), between them passing every rule of RULES (test_every_rule_is_tested_both_ways).
CLEAN = ("F2", "S5", "A1", "P2", "O2", "M4", "M5", "R1", "G1", "K1")


def _run(config, cases, filters: Filters, faults: str | None) -> dict:
    if faults:
        os.environ["OBAI_DEMO_FAULTS"] = faults
    else:
        os.environ.pop("OBAI_DEMO_FAULTS", None)
    try:
        code, out = headless.run(config, cases, headless.RunOptions(filters=filters, jobs=2))
    finally:
        os.environ.pop("OBAI_DEMO_FAULTS", None)
    results = load_results(Path(out["results"]))
    return {"code": code, "units": {u["unit_id"]: u for u in results["units"]}, "summary": results["summary"],
            "run_dir": Path(out["run_dir"])}


@pytest.fixture(scope="module")
def runs(harness_env, tmp_path_factory):
    # Only a turn without a trace waits for the resolve deadline; every other turn's trace is there at once.
    config = load_target_config(target_variant(tmp_path_factory.mktemp("cfg"),
                                               **{"trace_backend.resolve_deadline_s": 6}))
    cases = load_cases_for(config)
    # The adversarial cases have their own matrix (test_adversarial.py).
    ids = tuple(sorted(TARGETED | set(CLEAN)))
    assert not any(cases.by_id(i).adversarial for i in ids)
    faulted = _run(config, cases, Filters(ids=ids), spec(FAULTED))
    return {"cases": cases, "faulted": faulted}


def clean_units(runs) -> dict[str, dict]:
    """The units of the faulted run that no fault targets."""
    return {uid: u for uid, u in runs["faulted"]["units"].items() if u["case_id"] not in TARGETED}


def faulted_unit(runs, fault: str) -> dict:
    return runs["faulted"]["units"][MATRIX[fault].case_id]


def packet(runs, run: str, unit_id: str) -> dict:
    return json.loads((runs[run]["run_dir"] / f"{unit_id}.json").read_text())


def test_the_untargeted_cases_have_no_false_fail(runs):
    units = clean_units(runs)
    assert {u["case_id"] for u in units.values()} == set(CLEAN)
    # The judged-fault cases run a fault of their own through their env (cases.yaml, JC*, JF*).
    everyday = {c.feature for c in runs["cases"].cases
                if not c.adversarial and not c.disabled and "OBAI_DEMO_FAULTS" not in c.env}
    assert {runs["cases"].by_id(c).feature for c in CLEAN} == everyday
    for uid, unit in units.items():
        known = set(runs["cases"].by_id(unit["case_id"]).known_needs_review)
        if known:
            assert unit["verdict"] == "needs_review" and set(unit["reasons"]) <= known, (uid, unit["reasons"])
        else:
            assert (unit["verdict"], unit["reasons"]) == ("pass", []), (uid, unit["verdict"], unit["reasons"])


def _tripped(unit: dict) -> set[str]:
    codes = set()
    for o in unit["rule_outcomes"]:
        if o["status"] in ("fail", "needs_review"):
            codes |= set(o.get("codes") or [o["code"]])
    return codes


@pytest.mark.parametrize("fault", sorted(FAULTED))
def test_fault_trips_exactly_its_code(runs, fault):
    row = MATRIX[fault]
    unit = faulted_unit(runs, fault)
    assert unit["verdict"] == row.verdict, (fault, unit["verdict"], unit["reasons"])
    assert unit["reasons"][0] == row.code, (fault, unit["reasons"])
    if row.verdict != "inconclusive":
        assert _tripped(unit) == {row.code} | row.implied, (fault, _tripped(unit))


def test_run_exit_codes(runs):
    assert runs["faulted"]["code"] == Exit.UNIT_FAILED


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_is_tested_both_ways(runs, rule):
    passes = [u for u in clean_units(runs).values()
              if any(o["rule"] == rule and o["status"] == "pass" for o in u["rule_outcomes"])]
    trips = [u for u in runs["faulted"]["units"].values()
             if any(o["rule"] == rule and o["status"] in ("fail", "needs_review") for o in u["rule_outcomes"])]
    assert passes, f"no clean unit passes {rule}"
    assert trips, f"no fault trips {rule}"


# --- what driving a unit produces ------------------------------------------------------------

def test_a_sync_unit_finds_its_trace_by_tag_and_curates_it(runs):
    p = packet(runs, "faulted", "F2")  # no fault targets F2
    assert p["turn"]["exit_code"] == 0 and not p["turn"]["timed_out"]
    assert p["trace"]["status"] == "resolved" and p["trace"]["method"] == "tag"
    digest = p["trace"]["digest"]
    assert p["turn"]["correlation_tag"] in digest["tags"]
    assert [s["skill"] for s in digest["skill_loads"]] == ["fundamentals"]
    assert [c["name"] for c in digest["specialist_calls"]] == ["fundamentals_analysis"]
    assert digest["final_response"].strip() == p["answer"]
    assert "SKILL LOADS:" in p["trace"]["curated"] and "FUNDAMENTALS_ANALYSIS CALLS" in p["trace"]["curated"]
    assert p["harness"]["overhead_ms"] < p["harness"]["wall_ms"]


def test_an_async_unit_waits_and_follows_up_in_the_same_session(runs):
    p = packet(runs, "faulted", "A1")  # no fault targets A1
    assert p["async"]["job_id"] and p["async"]["wait_s"] >= p["async"]["eta_s"]
    follow = p["followup"]
    assert follow is not None and "Total trades" in follow["answer"]
    assert follow["trace"]["status"] == "resolved"
    assert follow["trace"]["trace_id"] != p["trace"]["trace_id"]
    assert follow["trace"]["digest"]["thread_id"] == p["trace"]["digest"]["thread_id"] == p["session"]


def test_a_refusal_exits_1_and_calls_no_specialist(runs):
    p = packet(runs, "faulted", "R1")
    assert p["turn"]["exit_code"] == 1
    digest = p["trace"]["digest"]
    assert digest["guardrail"]["refused"] and digest["specialist_calls"] == []


def test_units_driven_in_parallel_each_get_their_own_trace(runs):
    packets = [packet(runs, "faulted", uid) for uid in runs["faulted"]["units"]]
    resolved = [p for p in packets if p["trace"]["status"] == "resolved"]
    no_single_trace = {MATRIX[f].case_id for f in ("no_trace", "duplicate_trace")}
    assert {p["unit_id"] for p in packets} - {p["unit_id"] for p in resolved} == no_single_trace
    assert len({p["trace"]["trace_id"] for p in resolved}) == len(resolved)
    for p in resolved:
        assert (p["trace"]["digest"]["final_response"] or "").strip() == p["answer"], p["unit_id"]
        assert json.dumps(p["case"]["query"], ensure_ascii=False)[1:-1] in p["trace"]["curated"], p["unit_id"]


def test_a_turn_without_a_trace_is_trace_not_found_after_polling(runs):
    p = packet(runs, "faulted", MATRIX["no_trace"].case_id)
    assert p["turn"]["exit_code"] == 0
    assert p["trace"]["status"] == "trace_not_found" and p["trace"]["attempts"] > 1


def test_a_duplicated_trace_is_multi_match_with_both_candidates(runs):
    p = packet(runs, "faulted", MATRIX["duplicate_trace"].case_id)
    assert p["trace"]["status"] == "multi_match" and len(p["trace"]["candidates"]) == 2
