"""The loss layer on real demo runs: one injected fault is found, two clean runs find nothing.

Three headless runs of nine cases (strategy backtests, an async job, price lookups) with the
demo's seeded flake switched on for variance: a clean baseline, a run where every backtest
reports zero trades, and a second clean run. A test plan with small spread estimates lets
both partitions reach n_min; the comparison must list the fault's category in the backtest
partition — with a real citation — and nothing for the clean pair.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt
from obai_e2e.base.errors import Exit
from obai_e2e.config.cases import load_cases
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.run import headless
from obai_e2e.run.finish import after_run

from .conftest import REPO, target_variant

pytestmark = pytest.mark.slow

IDS = ["S1", "S2", "S3", "S4", "S5", "A1", "MD1", "MD2", "MD3"]


def rows(path: Path) -> list[list[str]]:
    tokens = MarkdownIt("commonmark").enable("table").parse(path.read_text())
    cells, out, body = [], [], False
    for t in tokens:
        if t.type == "tbody_open":
            body = True
        elif t.type == "tr_open":
            cells = []
        elif t.type == "inline" and body:
            cells.append(t.content)
        elif t.type == "tr_close" and body:
            out.append(cells)
    return out


@pytest.fixture(scope="module")
def loss_runs(harness_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("loss")
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] in IDS]
    (tmp / "cases.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    plan = yaml.safe_load((REPO / "cases" / "plan.yaml").read_text())
    plan["mde"] = 0.1
    for part in plan["partitions"]:
        if part["labels"].get("intent") in ("backtest", "price_lookup"):
            part["s"] = 0.02  # a pilot-sized spread: n_min = 2
    (tmp / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False))
    target = target_variant(tmp, **{"run.plan": str(tmp / "plan.yaml")})
    config = load_target_config(target)
    cases = load_cases(tmp / "cases.yaml", specialists=config.vocabulary.specialists)
    os.environ["OBAI_DEMO_FLAKE"] = "7:0.2"
    done = {}
    try:
        for name, faults in (("base", None), ("fault", "zero_trades"), ("clean", None)):
            if faults:
                os.environ["OBAI_DEMO_FAULTS"] = faults
            else:
                os.environ.pop("OBAI_DEMO_FAULTS", None)
            baseline = done["base"]["run_dir"] if name != "base" else None
            hook = after_run(config, cases, html=True, baseline=Path(baseline) if baseline else None)
            code, out = headless.run(config, cases, Filters(), jobs=2, after_finish=hook)
            done[name] = {"code": code, **out}
    finally:
        os.environ.pop("OBAI_DEMO_FLAKE", None)
        os.environ.pop("OBAI_DEMO_FAULTS", None)
    return done


def test_suite_json_has_the_partition_table(loss_runs):
    suite = json.loads((Path(loss_runs["base"]["run_dir"]) / "suite.json").read_text())
    by_intent = {p["labels"].get("intent"): p for p in suite["partitions"]}
    back = by_intent["backtest"]
    assert back["n"] == 6 and back["n_min"] == 2 and back["status"] == "scored"
    assert suite["catalog_version"] == "v1" and suite["mode"] == "A" and suite["mde"] == 0.1
    s1 = json.loads((Path(loss_runs["base"]["run_dir"]) / "results.json").read_text())
    assert sum(1 for u in s1["units"] if u["case_id"] == "S1") == 3  # the stochastic case repeats


def test_the_injected_fault_is_listed_in_its_partition_with_a_citation(loss_runs):
    run_dir = Path(loss_runs["fault"]["run_dir"])
    table = rows(run_dir / "TOP-REGRESSIONS.md")
    assert table, (run_dir / "TOP-REGRESSIONS.md").read_text()
    listed = {(r[0], r[1]) for r in table}
    assert ("intent=backtest,provenance=synthetic", "specialist_output") in listed or \
           ("intent=backtest", "specialist_output") in listed, listed
    assert all("backtest" in partition for partition, _ in listed), listed
    top = table[0]
    assert float(top[3]) > 0.1  # ci_low above mde
    assert "specialist.strategy.zero_trades" in top[7] and "span" in top[7]
    lows = [float(r[3]) for r in table]
    assert lows == sorted(lows, reverse=True)
    assert loss_runs["fault"]["code"] == Exit.UNIT_FAILED
    html = (run_dir / "report.html").read_text()
    assert "specialist.strategy.zero_trades" in html and "Top regressions" in html


def test_two_clean_runs_list_nothing(loss_runs):
    run_dir = Path(loss_runs["clean"]["run_dir"])
    assert rows(run_dir / "TOP-REGRESSIONS.md") == []
    comparison = json.loads((run_dir / "comparison.json").read_text())
    assert comparison["k"] > 0  # cells were compared; none was provably worse


def test_loss_history_has_one_row_per_scored_run(loss_runs, harness_env):
    history = (Path(harness_env) / "LOSS-HISTORY.md").read_text()
    lines = [l for l in history.splitlines() if l.startswith("| 20")]
    assert len(lines) == 3
