"""Kill the headless run with SIGKILL at many random points, resume, and get the same results.

The reference is an uninterrupted run of the same cases. After every kill the same
command resumes the same run directory; at the end results.json must equal the
reference (ignoring what differs between any two runs: timestamps, latencies, trace and
session ids) and report.md must hold each unit exactly once.

The agent is the tiny hostile one (tests/agents/hostile_agent.py), traced and with an async
job, its turns made to last 3 s: a kill lands in a turn, in the reading of its trace, in the
storing and judging of a unit, in an async job's wait or in its follow-up turn, while each
attempt costs little more than the runner's own start. The async unit needs longer than any
attempt is allowed, so the run cannot end before the last kill.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from obai_e2e.report.report_md import read_rows
from obai_e2e.report.results import load_results

from .hostile_helpers import cli, hostile_target

pytestmark = [pytest.mark.slow, pytest.mark.heavy(18)]

IDS = "MD1,F2,R1,A1,O2,M1"
KILLS = 10
VOLATILE = {"latency", "trace_ids", "trace_urls", "curated_trace", "followup_curated_trace", "judge_panel"}
# An async job's id is derived from the session, which is new in every run.
JOB = re.compile(r"\b(job|Job ID:?)\s*\d+", re.IGNORECASE)


def comparable(results: dict) -> list[dict]:
    out = []
    for u in results["units"]:
        u = {k: v for k, v in u.items() if k not in VOLATILE}
        u["rule_outcomes"] = [{**o, "detail": JOB.sub(r"\1 N", o["detail"]),
                               "evidence": [{"source": e["source"]} for e in o["evidence"]]}
                              for o in u["rule_outcomes"]]
        u["observed"] = JOB.sub(r"\1 N", u["observed"].split("; answer")[0])
        u["answer"] = JOB.sub(r"\1 N", u["answer"])
        if u.get("followup_answer"):
            u["followup_answer"] = JOB.sub(r"\1 N", u["followup_answer"])
        out.append(u)
    return out


def test_random_kills_then_resume_equal_an_uninterrupted_run(harness_env, trace_store, tmp_path):
    target, _ = hostile_target(tmp_path, "slow:3,async")
    args = ("--jobs", "2", "--no-html", "--target", str(target))
    ref = cli("run", "--id", IDS, *args)
    out, err = ref.communicate(timeout=600)
    assert ref.returncode in (0, 1), err.decode()[-2000:]      # 1: the agent's answers fail some rules
    reference = load_results(Path(json.loads(out)["results"]))
    followed = json.loads((Path(json.loads(out)["run_dir"]) / "A1.json").read_text())["followup"]
    assert "Total trades" in followed["answer"], followed      # the async job was followed up

    rng = random.Random(20261129)
    before = set(Path(harness_env).glob("2*/*"))
    first = cli("run", "--id", IDS, *args)
    deadline = time.monotonic() + 120
    created = []
    while not created and time.monotonic() < deadline:
        created = [p for p in set(Path(harness_env).glob("2*/*")) - before if (p / "run.json").exists()]
        time.sleep(0.05)
    assert created, "the first attempt did not create its run directory"
    time.sleep(rng.uniform(0.0, 3.0))
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    run_dir = created[0]

    kills = 1
    finished = None
    while finished is None:
        proc = cli("run", "--resume", str(run_dir), *args)
        if kills < KILLS:
            try:
                proc.wait(timeout=rng.uniform(0.3, 5.0))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == ref.returncode, err.decode()[-2000:]
        finished = json.loads(out)
    assert kills >= KILLS - 2
    resumed = load_results(run_dir / "results.json")
    assert comparable(resumed) == comparable(reference)
    ids = [r["ID"] for r in read_rows(run_dir / "report.md")]
    assert sorted(ids) == sorted(u["unit_id"] for u in reference["units"])
    assert len(ids) == len(set(ids))
