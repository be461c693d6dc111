"""desk-graph (examples/langgraph-agent): its graph in process, and its recorded traces judged with
the example's own target.yaml and cases.yaml (clean turns pass, each fault trips its code).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from desk_graph import cli, planner
from desk_graph.faults import FAULTS
from obai_e2e.adopt import validate
from obai_e2e.adopt.sample import Sampled
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.trace.curate import curate

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "langgraph-agent"
DATA = Path(__file__).resolve().parent / "graph_data"
CONFIG = load_target_config(EXAMPLE / "target.yaml")
CASES = load_cases_for(CONFIG, EXAMPLE / "cases.yaml")


def judged(name: str) -> tuple[str, list[str]]:
    t = json.loads((DATA / f"{name}.trace.json").read_text())
    s = Sampled(trace=t["trace"], spans=t["spans"])
    query = t["trace"]["input"]["question"]
    case = next(c for c in CASES.cases if c.query == query)
    row = validate.check(None, CONFIG, {case.id: case}, s, curate(s.trace, s.spans, CONFIG.vocabulary), case.id,
                         query)
    return row["verdict"], row["reasons"]


@pytest.mark.parametrize("name", ["price", "price_revenue", "financials", "naked_call", "condor", "refused"])
def test_clean_turns_pass(name):
    assert judged(name) == ("pass", [])


@pytest.mark.parametrize("name,fault,verdict", [
    ("price_feed_down", "feed_down", "fail"),
    ("financials_strict_screen", "strict_screen", "fail"),
    ("price_revenue_skip_playbook", "skip_playbook", "fail"),
    ("price_stray_figure", "stray_figure", "needs_review"),
])
def test_each_fault_trips_its_code(name, fault, verdict):
    assert judged(name) == (verdict, [FAULTS[fault][0]])


def test_the_planner_asks_the_desks_in_the_questions_order():
    calls = planner.plan("What is the revenue and the price of NVDA and Apple?")
    assert [(c.tool, c.args) for c in calls] == [
        ("company_financials", {"symbol": "NVDA"}), ("company_financials", {"symbol": "AAPL"}),
        ("quote_lookup", {"symbol": "NVDA"}), ("quote_lookup", {"symbol": "AAPL"})]
    assert planner.playbooks(calls) == ["filings", "market-data"]
    assert planner.plan("Write me a poem.") == []


def test_one_turn_in_process_prints_json_lines(capsys, monkeypatch):
    monkeypatch.setenv("DESK_GRAPH_TRACE", "off")
    monkeypatch.delenv("DESK_GRAPH_FAULTS", raising=False)
    assert cli.main(["ask", "--thread", "t1", "Iron condor on MSFT 440/450/490/500 for a 3.20 credit: payoff?"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["node"] for x in lines[:-1]] == ["screen", "playbooks", "agent", "tools", "agent", "finish"]
    assert lines[-1]["type"] == "result" and "Breakevens: 446.80 and 493.20" in lines[-1]["result"]
    assert cli.main(["ask", "Write me a poem about the sea."]) == 3
    monkeypatch.setenv("DESK_GRAPH_FAULTS", "nope")
    assert cli.main(["ask", "Apple price?"]) == 2
