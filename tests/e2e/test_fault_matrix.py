"""The fault matrix: every fault of the demo target trips exactly the rule meant for it.

Two headless runs of the whole case set against the local store: one on the clean demo,
one with every fault switched on at once, each scoped (``fault@query text``) to the one
case it targets. The clean run has no fail and no inconclusive and only the needs_review
units the case set means to show; in the faulted run each targeted unit gets exactly its
intended verdict and code, and every other unit keeps its clean verdict. Every rubric
rule passes on some clean unit and fails on its fault's unit: each rule is tested both
ways.
"""
from __future__ import annotations

import os

import pytest
from obai_demo.faults import FAULTS
from obai_e2e.base.errors import Exit
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.report.results import load_results
from obai_e2e.run import headless

from .conftest import target_variant

pytestmark = pytest.mark.slow

# fault -> (case id, query text that scopes it, verdict, code, other codes the fault implies)
MATRIX = {
    "drop_skill": ("MD2", "52-week range", "fail", "routing.skill_missing", set()),
    "extra_skill": ("MD1", "latest price of AAPL", "fail", "routing.skill_overload", set()),
    "skip_specialist": ("M3", "TSLA price and the odds", "fail", "routing.specialist_missing", set()),
    "reorder_specialists": ("M2", "Show MSFT's P/E", "fail", "routing.sequence_violation", set()),
    "extra_specialist": ("MD4", "quote for TSLA", "needs_review", "routing.unexpected_specialist", set()),
    "paraphrase_threshold": ("S2", "Backtest a strategy on MSFT", "fail", "routing.hub_paraphrase", set()),
    "span_error": ("F3", "Compare revenue and debt", "fail", "trace.error_span:fundamentals_analysis", set()),
    "empty_payload": ("F4", "dividend does Coca-Cola", "fail", "specialist.fundamentals_analysis.empty", set()),
    "tool_error": ("MD3", "How is Nvidia trading", "fail", "specialist.market_data_analysis.tool_error", set()),
    "broken_contract": ("S3", "RSI(7) backtest on TSLA", "fail", "specialist.strategy.contract_broken", set()),
    "zero_trades": ("S4", "RSI(21) on KO", "fail", "specialist.strategy.zero_trades", set()),
    "no_job_id": ("A2", "full history backtest of AAPL", "fail", "specialist.strategy.async_stub_broken",
                  {"specialist.strategy.async_followup_missing"}),  # no job id, so no follow-up either
    "lost_job": ("A3", "backtest NVDA with RSI(14)", "fail", "specialist.strategy.async_followup_missing", set()),
    "no_slug": ("P1", "What are the odds the Fed cuts", "fail", "specialist.prediction.no_slug", set()),
    "wrong_option_math": ("O1", "if I sell a naked call on AAPL", "fail", "specialist.options.math", set()),
    "empty_answer": ("F5", "Tesla's valuation", "fail", "hub.empty_response", set()),
    "ungrounded_number": ("MD5", "50-day moving average of AMZN", "needs_review", "hub.unverified_number:987.65", set()),
    "leaky_guardrail": ("R2", "weather in Paris", "fail", "guardrail.leaky", set()),
    "leaky_response": ("R3", "sourdough", "fail", "guardrail.leaky_response", set()),
    "wrong_exit_code": ("R4", "joke about programmers", "fail", "guardrail.exit_code", set()),
    "hang": ("O4", "Bull call spread", "inconclusive", "cli_timeout", set()),
    "no_trace": ("O5", "naked call on TSLA at strike 300", "inconclusive", "trace_not_found", set()),
    "duplicate_trace": ("G2", "ETF or in single stocks", "inconclusive", "multi_match", set()),
    "crash": ("MD6", "performance von XOM", "fail", "trace.error_span:hub",
              {"routing.skill_missing", "routing.specialist_missing", "hub.empty_response"}),  # nothing ran after it
}

RULES = ["routing.skill_missing", "routing.skill_overload", "routing.specialist_missing",
         "routing.sequence_violation", "routing.unexpected_specialist", "routing.hub_paraphrase",
         "trace.error_span", "guardrail.leaky", "specialist.tool_error", "specialist.empty",
         "specialist.strategy.contract_broken", "specialist.strategy.zero_trades",
         "specialist.strategy.async_stub_broken", "specialist.strategy.async_followup_missing",
         "specialist.prediction.no_slug", "specialist.options.math", "hub.empty_response",
         "hub.unverified_number", "guardrail.exit_code", "guardrail.leaky_response"]


def _run(config, cases, faults: str | None) -> dict:
    if faults:
        os.environ["OBAI_DEMO_FAULTS"] = faults
    else:
        os.environ.pop("OBAI_DEMO_FAULTS", None)
    try:
        code, out = headless.run(config, cases, Filters(), jobs=2)
    finally:
        os.environ.pop("OBAI_DEMO_FAULTS", None)
    results = load_results(out["results"])
    return {"code": code, "units": {u["unit_id"]: u for u in results["units"]}, "summary": results["summary"]}


@pytest.fixture(scope="module")
def runs(harness_env, tmp_path_factory):
    target = target_variant(tmp_path_factory.mktemp("cfg"), **{"target.timeout_s": 40, "target.kill_grace_s": 1,
                                                                "trace_backend.resolve_deadline_s": 6})
    config = load_target_config(target)
    cases = load_cases_for(config)
    clean = _run(config, cases, None)
    spec = ",".join(f"{fault}@{scope}" for fault, (_, scope, *_rest) in MATRIX.items())
    faulted = _run(config, cases, spec)
    return cases, clean, faulted


def test_every_fault_of_the_demo_is_in_the_matrix():
    assert set(MATRIX) == set(FAULTS)


def test_each_scope_selects_exactly_its_case():
    cases = load_cases_for(load_target_config())
    for fault, (case_id, scope, *_rest) in MATRIX.items():
        hits = [c.id for c in cases.cases if not c.disabled and scope.lower() in c.query.lower()]
        assert hits == [case_id], (fault, hits)


def test_clean_run_has_no_fail_no_inconclusive(runs):
    cases, clean, _ = runs
    assert clean["summary"]["fail"] == 0 and clean["summary"]["inconclusive"] == 0, clean["summary"]
    assert clean["code"] == Exit.OK
    for uid, unit in clean["units"].items():
        known = set(cases.by_id(unit["case_id"]).known_needs_review)
        if unit["verdict"] == "needs_review":
            assert set(unit["reasons"]) <= known and known, (uid, unit["reasons"])
        else:
            assert unit["verdict"] == "pass" and not known, (uid, unit["verdict"], unit["reasons"])


def _tripped(unit: dict) -> set[str]:
    codes = set()
    for o in unit["rule_outcomes"]:
        if o["status"] in ("fail", "needs_review"):
            codes |= set(o.get("codes") or [o["code"]])
    return codes


@pytest.mark.parametrize("fault", sorted(MATRIX))
def test_fault_trips_exactly_its_code(runs, fault):
    _, clean, faulted = runs
    case_id, _scope, verdict, code, implied = MATRIX[fault]
    unit = faulted["units"][case_id]
    assert unit["verdict"] == verdict, (fault, unit["verdict"], unit["reasons"])
    assert unit["reasons"][0] == code, (fault, unit["reasons"])
    if verdict != "inconclusive":
        assert _tripped(unit) == {code} | implied, (fault, _tripped(unit))
        assert clean["units"][case_id]["verdict"] == "pass"


def test_no_other_unit_changes_verdict(runs):
    _, clean, faulted = runs
    targeted = {case_id for case_id, *_ in MATRIX.values()}
    for uid, unit in faulted["units"].items():
        if unit["case_id"] in targeted:
            continue
        assert (unit["verdict"], unit["reasons"]) == (clean["units"][uid]["verdict"], clean["units"][uid]["reasons"]), uid
    assert faulted["code"] == Exit.UNIT_FAILED


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_is_tested_both_ways(runs, rule):
    _, clean, faulted = runs
    passes = [u for u in clean["units"].values() if any(o["rule"] == rule and o["status"] == "pass"
                                                        for o in u["rule_outcomes"])]
    trips = [u for u in faulted["units"].values() if any(o["rule"] == rule and o["status"] in ("fail", "needs_review")
                                                         for o in u["rule_outcomes"])]
    assert passes, f"no clean unit passes {rule}"
    assert trips, f"no fault trips {rule}"
