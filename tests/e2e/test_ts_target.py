"""tally-desk (examples/ts-agent: Node, Opik's TypeScript SDK) judged end to end through its own target.yaml.

One headless run from a folder outside the bundle: every case of the example clean, plus a copy of a
case with a fault of the agent switched on through the case's ``env``, one per layer of the rubric. Clean units pass (the desks asked
at once start in one millisecond: a tie, not a violation); each faulted unit trips exactly its code.
Skipped locally without node and npm, required in CI (the ``ts_agent`` fixture installs the packages).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from .conftest import obai_here

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ts-agent"
pytestmark = pytest.mark.slow

# fault -> (case it is put on, verdict, the one code it trips): one per layer of the rubric, and the exit code,
# which no recorded trace shows; tests/examples/test_tally_desk.py judges every other fault on its recorded trace
MATRIX = {
    "late_quotes": ("Q2", "fail", "routing.sequence_violation"),
    "desk_raises": ("Q1", "fail", "trace.error_span:desk.quotes"),
    "payoff_slip": ("O1", "fail", "specialist.options.math"),
    "gate_leak": ("R1", "fail", "guardrail.leaky"),
    "stray_figure": ("Q1", "needs_review", "hub.unverified_number:12.5%"),
    "refusal_exit_zero": ("R1", "fail", "guardrail.exit_code"),
}


def faults_of_the_agent(ts_agent: Path) -> set[str]:
    done = subprocess.run(["node", "desk.mjs", "faults"], cwd=ts_agent, capture_output=True, text=True, timeout=60)
    return set(json.loads(done.stdout))


@pytest.fixture(scope="module")
def ts_run(ts_agent, trace_store, tmp_path_factory):
    work = tmp_path_factory.mktemp("tally")
    data = yaml.safe_load((EXAMPLE / "cases.yaml").read_text())
    by_id = {c["id"]: c for c in data["cases"]}
    for fault, (case_id, _, _) in MATRIX.items():
        case = copy.deepcopy(by_id[case_id])
        case.update(id=f"{case_id}_{fault}", env={"TALLY_FAULTS": fault})
        case.pop("smoke", None)
        data["cases"].append(case)
    (work / "cases.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TALLY_", "OBAI_E2E_TARGET", "OBAI_E2E_CASES"))}
    env.update(OBAI_E2E_RUNS=str(work / "runs"), OBAI_TRACE_STORE_DIR=str(trace_store.data_dir))
    done = obai_here(["run", "--target", str(ts_agent / "target.yaml"), "--cases", "cases.yaml", "--jobs", "2",
                      "--no-html"], work, env)
    assert done.returncode == 1, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["report_md"]).parent
    units = {u["unit_id"]: u for u in map(json.loads, (run_dir / "results.units.jsonl").read_text().splitlines())}
    return {"units": units, "run_dir": run_dir, "clean": list(by_id)}


def test_every_fault_is_judged_here_or_on_its_recorded_trace(ts_agent):
    from examples.test_tally_desk import FAULTS as RECORDED

    recorded = {next(f for f in faults_of_the_agent(ts_agent) if name.endswith(f)) for name in RECORDED}
    # the lost flush leaves no trace to judge: tests/examples/test_tally_desk.py checks that
    assert faults_of_the_agent(ts_agent) - set(MATRIX) - recorded == {"no_flush"}


def test_clean_units_pass(ts_run):
    units = ts_run["units"]
    assert {i: (units[i]["verdict"], units[i]["reasons"]) for i in ts_run["clean"]} == \
        {i: ("pass", []) for i in ts_run["clean"]}


@pytest.mark.parametrize("fault", list(MATRIX))
def test_each_fault_trips_its_code(ts_run, fault):
    case_id, verdict, code = MATRIX[fault]
    unit = ts_run["units"][f"{case_id}_{fault}"]
    assert (unit["verdict"], unit["reasons"]) == (verdict, [code]), unit["rule_outcomes"]


def test_every_unit_found_its_trace_by_thread(ts_run):
    for uid in ts_run["units"]:
        packet = json.loads((ts_run["run_dir"] / f"{uid}.json").read_text())
        assert packet["trace"]["method"] == "thread" and packet["trace"]["trace_id"], uid
