"""Finishing a run of 1,500 units, and merging its shards, fit in a fixed amount of memory.

A synthetic run is made from the session's real demo run (bench/synth_run.py: its packets,
verdicts and kept traces under fresh ids, a baseline, two sealed shards). Each step then
runs in a child process whose data segment may grow by no more than ``BUDGET_MB`` past what
its imports took (RLIMIT_DATA): ``finish`` (results.json and its rows, diff.json against the
baseline, report.md's head, JUnit, the trace pages, the loss layer, report.html, the seal)
and ``merge`` (every part checked against its seal, every unit copied, report.md's rows).
Holding every unit's record at once (the views of report.html, the diff's entries, report.md
parsed whole) takes more than twice the budget at this size; a regression fails here, with
the child's MemoryError, in seconds.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

pytestmark = pytest.mark.slow

UNITS = 1500
SHARD_UNITS = 600
BUDGET_MB = 40

CHILD = r"""
import json, resource, sys
from pathlib import Path
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.rundir.meta import load_run
from obai_e2e.run.finish import finish
from obai_e2e.run.merge import load_parts, merge
from obai_e2e.run.plan import plan
import numpy  # noqa: F401 - the loss layer's; its buffers belong to the baseline

def vm_data():
    for line in open("/proc/self/status"):
        if line.startswith("VmData:"):
            return int(line.split()[1]) * 1024

budget, step, *args = sys.argv[1:]
resource.setrlimit(resource.RLIMIT_DATA, (vm_data() + int(budget) * 2**20, resource.RLIM_INFINITY))
if step == "finish":
    run_dir, baseline = Path(args[0]), Path(args[1])
    meta = load_run(run_dir)
    config = load_target_config(meta.target_config_path)
    cases = load_cases_for(config, meta.cases_path)
    out = finish(config, cases, plan(run_dir, cases), baseline=baseline)
    print(json.dumps({"summary": out["summary"], "diff_counts": out["diff_counts"]}))
else:
    into, parts = Path(args[0]), load_parts([Path(p) for p in args[1:]])
    config = load_target_config(parts[0].meta.target_config_path)
    merge(config, load_cases_for(config, parts[0].meta.cases_path), parts, into)
    print(json.dumps({"merged": str(into)}))
"""


def synthesize(source: Path, out: Path) -> dict:
    spec = importlib.util.spec_from_file_location("synth_run", REPO / "bench" / "synth_run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("synth_run", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.synthesize(source, out, UNITS, baseline=True, shards=2, shard_units=SHARD_UNITS)


def child(step: str, *args: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(BUDGET_MB), step, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{step} did not fit in {BUDGET_MB} MB more than its imports:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def synthetic(demo_run, tmp_path_factory) -> dict:
    return synthesize(demo_run.run_dir, tmp_path_factory.mktemp("synthetic"))


def test_finishing_a_large_run_fits_the_budget(synthetic, demo_run):
    env = {**demo_run.env, "OBAI_E2E_RUNS": str(Path(synthetic["run_dir"]).parents[1])}
    out = child("finish", synthetic["run_dir"], synthetic["baseline"], env=env)
    run_dir = Path(synthetic["run_dir"])
    assert out["summary"]["total"] == UNITS and sum(out["diff_counts"].values()) >= UNITS
    for name in ("results.json", "results.units.jsonl", "diff.json", "results.junit.xml", "report.html", "seal.json"):
        assert (run_dir / name).stat().st_size > 0, name
    assert json.loads((run_dir / "results.json").read_text())["units_file"]["count"] == UNITS


def test_merging_the_shards_fits_the_budget(synthetic, demo_run, tmp_path):
    into = tmp_path / "runs" / "2026-12-09" / "000000"
    env = {**demo_run.env, "OBAI_E2E_RUNS": str(tmp_path / "runs")}
    child("merge", str(into), *synthetic["shards"], env=env)
    assert len(list(into.glob("*.verdict.json"))) == SHARD_UNITS
    assert (into / "report.md").read_text(encoding="utf-8").count("\n| ") >= SHARD_UNITS
