"""SIGINT and SIGTERM at random moments of a ``--jobs 2`` run, then resume: the same results.

The agent is the tiny hostile one (a quick, traced answer), so that ten interruptions
fit in half a minute. After every interruption the runner must end promptly and leave no
process of any turn behind (read from the process table); at the end no sandbox is left,
report.md holds each unit once, and results.json equals an uninterrupted run's (ignoring
what differs between any two runs: timestamps, latencies, trace and session ids).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import warnings
from pathlib import Path

import pytest
from obai_e2e.report.report_md import read_rows
from obai_e2e.report.results import load_results

from .conftest import REPO, obai_json_here
from .hostile_helpers import cli, descendants, hostile_target, marked, sandboxes, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.heavy(25)]

IDS = "MD1,MD2,MD3,F1,R1,O1,MD4,MD5"
INTERRUPTS = 10
VOLATILE = {"latency", "trace_ids", "trace_urls", "curated_trace", "followup_curated_trace", "judge_panel"}


def comparable(results: dict) -> list[dict]:
    out = []
    for u in results["units"]:
        u = {k: v for k, v in u.items() if k not in VOLATILE}
        u["rule_outcomes"] = [{**o, "evidence": [{"source": e["source"]} for e in o["evidence"]]}
                              for o in u["rule_outcomes"]]
        out.append(u)
    return out


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode in (0, 1), err.decode()[-3000:]
    return proc.returncode, json.loads(out)


def left(run_dir: Path) -> float:
    """How much of a whole run's span a resumed run still has: its units left to judge, plus a
    quarter for finishing (judging, report, results), so that finishing is interrupted too."""
    units = len(IDS.split(","))
    judged = len(list(run_dir.glob("*.verdict.json")))
    return min(1.0, max(0, units - judged) / units + 0.25)


def in_flight(proc: subprocess.Popen) -> bool:
    """Whether a turn of the runner is running (its agent is a process below the runner)."""
    return any("--session" in line for line in descendants(proc.pid))


def test_random_sigint_and_sigterm_then_resume_equal_an_uninterrupted_run(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "slow:0.3")
    args = ("--jobs", "2", "--no-html", "--target", str(target))
    # The reference run also measures how long a run lasts on this machine now: from its start
    # to its first turn, and from there to its end. Interrupts are drawn within that span, so that
    # nearly every attempt lands in a run (rather than after it) however fast or busy the machine is.
    t0 = time.monotonic()
    proc = cli("run", "--id", IDS, *args)
    assert wait_for(lambda: in_flight(proc) or proc.poll() is not None, 120, step=0.02)
    to_turn = time.monotonic() - t0
    ref_code, ref = finish(proc)
    span = max(1.0, time.monotonic() - t0 - to_turn)
    reference = load_results(Path(ref["results"]))
    assert {u["verdict"] for u in reference["units"]} >= {"pass", "fail"}

    rng = random.Random(20261130)
    runs: list[Path] = []
    ended: dict[Path, int] = {}  # a run an attempt finished, and that attempt's exit code
    interrupts, log = 0, []
    while interrupts < INTERRUPTS:
        if not runs or (runs[-1] / "results.json").exists():
            # A new run folder is only the setup here: made in this process, not by a runner of its own.
            code, out, err = obai_json_here("new-run", "--id", IDS, "--target", str(target), env=dict(os.environ),
                                            cwd=REPO)
            assert code == 0, err
            runs.append(Path(out["run_dir"]))
        proc = cli("run", "--resume", str(runs[-1]), *args)
        # Mostly once turns are in flight (then judging, the next turns, finishing); now and then at any
        # moment from the start; a resumed run lasts only as long as its units left take.
        if rng.random() < 0.75:
            delay = rng.uniform(0.0, span * left(runs[-1]))
            moment = f"turn+{delay:.2f}s"
            started = wait_for(lambda: in_flight(proc) or proc.poll() is not None, 120, step=0.02)
            assert started, log
        else:
            delay = rng.uniform(0.2, to_turn + span * left(runs[-1]))
            moment = f"{delay:.2f}s"
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            sig = rng.choice([signal.SIGINT, signal.SIGTERM])
            proc.send_signal(sig)
            try:
                proc.wait(timeout=60)  # a stop is prompt, whatever the runner was doing
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail(f"the runner did not stop within 60 s of {sig.name} at {moment}: {log}")
            interrupts += 1
            log.append(f"{sig.name}@{moment}->{proc.returncode}")
            err = proc.stderr.read().decode("utf-8", "replace")
            if "did not finish within" in err:  # the stop's watchdog ended it: prompt, but say where it stalled
                warnings.warn(f"a stop at {moment} was ended by its watchdog:\n{err[-6000:]}", stacklevel=1)
            assert wait_for(lambda: not marked(mark), 10), (log, marked(mark))
        else:
            proc.communicate()
            log.append(f"finished@{moment}->{proc.returncode}")
            if (runs[-1] / "results.json").exists():
                ended[runs[-1]] = proc.returncode
    # A run an attempt finished is as that attempt left it; resuming a finished run changes
    # nothing (shown once here), so only the interrupted ones are resumed to their end.
    again = next(iter(ended), None)
    if again is not None:
        before = (again / "results.json").read_bytes()
        assert finish(cli("run", "--resume", str(again), *args))[0] == ended[again], log
        assert (again / "results.json").read_bytes() == before
    for run_dir in runs:
        code = ended[run_dir] if run_dir in ended else finish(cli("run", "--resume", str(run_dir), *args))[0]
        assert code == ref_code, log
        resumed = load_results(run_dir / "results.json")
        assert comparable(resumed) == comparable(reference), (run_dir, log)
        ids = [r["ID"] for r in read_rows(run_dir / "report.md")]
        assert sorted(ids) == sorted(u["unit_id"] for u in reference["units"]) and len(ids) == len(set(ids))
    assert not marked(mark)
    assert not sandboxes(harness_env)
    print(f"{interrupts} interruptions over {len(runs)} run(s) (turns start {to_turn:.2f} s into a run, "
          f"a run lasts {span:.2f} s more): {', '.join(log)}")
