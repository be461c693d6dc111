"""No turn outlives the chat flow's drive worker: killed with SIGKILL, its turn dies with it; stopped with
``drive --stop``, a turn that ignores SIGTERM is killed after its grace and the stop returns only once it is
gone. Either way the unit in flight stays pending."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from obai_e2e.drive.containment import containment
from obai_e2e.run.drive_log import DriveLog

from .hostile_helpers import hostile_target, marked, run_cli, wait_for

pytestmark = pytest.mark.slow


def agents(mark: str) -> list[str]:
    return [p for p in marked(mark) if "--session" in p and "bwrap" not in p and "turn_jail" not in p]


def started(tmp_path, behaviour: str, **changes) -> tuple[Path, Path, str]:
    """A run of MD1 whose drive worker has its agent running: (run dir, target, the agent's mark)."""
    target, mark = hostile_target(tmp_path, behaviour, **{"target.timeout_s": 120, **changes})
    code, made, err = run_cli("new-run", "--id", "MD1", "--target", str(target))
    assert code == 0, err
    run_dir = Path(made["run_dir"])
    code, out, err = run_cli("drive", "--run-dir", str(run_dir), "--wait", "0.1", "--target", str(target))
    assert code == 0 and out["status"] == "running", err[-2000:]
    assert wait_for(lambda: agents(mark), 90), "the agent never started"
    return run_dir, target, mark


@pytest.mark.skipif(not containment().contained, reason=f"turns are not contained here: {containment().reason}")
def test_a_drive_worker_killed_with_sigkill_takes_its_turn_with_it(harness_env, tmp_path):
    run_dir, _, mark = started(tmp_path, "slow:120")
    worker = DriveLog(run_dir).state().pid
    os.kill(worker, signal.SIGKILL)
    try:
        assert wait_for(lambda: not agents(mark), 15), agents(mark)  # no sweep ran: the turn died with it
    finally:
        for line in marked(mark):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    assert not (run_dir / "MD1.json").exists()  # pending: the next drive drives it


def test_stop_kills_a_turn_that_ignores_sigterm_after_its_grace_and_returns_once_it_is_gone(harness_env,
                                                                                             tmp_path):
    run_dir, target, mark = started(tmp_path, "stubborn,slow:120", **{"target.kill_grace_s": 2})
    t0 = time.monotonic()
    code, stopped, err = run_cli("drive", "--run-dir", str(run_dir), "--stop", "--target", str(target))
    took = time.monotonic() - t0
    left = marked(mark)
    for line in left:
        os.kill(int(line.split()[0]), signal.SIGKILL)
    assert code == 0 and stopped["status"] == "interrupted", (stopped, err[-2000:])
    assert not left, left  # gone by the time the stop returned
    assert took >= 2  # the turn had its grace after SIGTERM before it was killed
    assert not (run_dir / "MD1.json").exists()
