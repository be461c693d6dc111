"""The chat flow's drive against the tiny hostile agent: a background worker, polled; killed with
SIGKILL in the middle, the next call resumes it; no unit is driven twice, none is lost."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from obai_e2e.run.drive_log import DriveLog

from .hostile_helpers import hostile_target, marked, run_cli, wait_for

pytestmark = pytest.mark.slow

UNITS = ("MD1", "MD2", "MD3", "MD4", "F1", "F2")


def drive(run_dir: str, target: Path, wait: float) -> tuple[int, dict]:
    code, out, err = run_cli("drive", "--run-dir", run_dir, "--jobs", "2", "--wait", str(wait), "--target",
                             str(target), timeout=600)
    assert out is not None, err[-2000:]
    return code, out


def packets(run_dir: Path) -> dict[str, bytes]:
    return {u: (run_dir / f"{u}.json").read_bytes() for u in UNITS if (run_dir / f"{u}.json").exists()}


def test_a_drive_killed_with_sigkill_resumes_with_the_next_call(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "slow:0.8")
    code, made, err = run_cli("new-run", "--id", ",".join(UNITS), "--target", str(target))
    assert code == 0, err
    run_dir = Path(made["run_dir"])
    code, first = drive(str(run_dir), target, 0.1)
    assert code == 0 and first["status"] == "running" and first["units"] == []
    log = DriveLog(run_dir)
    assert wait_for(lambda: len(packets(run_dir)) >= 2, timeout=120, step=0.05)
    worker = log.state().pid
    os.kill(worker, signal.SIGKILL)
    before = packets(run_dir)
    assert 2 <= len(before) < len(UNITS), "the worker was killed with units still to drive"
    assert wait_for(lambda: not Path(f"/proc/{worker}").exists() or "Z" in Path(f"/proc/{worker}/stat").read_text(),
                    timeout=30)

    # the next call finds the worker dead, starts another and reports only what it had not shown
    seen: list[str] = []
    for _ in range(20):
        code, out = drive(str(run_dir), target, 30)
        assert code == 0, out
        seen += out["units"]
        if out["status"] == "done":
            break
    assert out["status"] == "done" and log.state().pid != worker
    assert out["driven"] == f"{len(UNITS)} of {len(UNITS)} units have a packet and a check"
    assert out["count"].startswith(f"{len(UNITS)} units driven: ")
    after = packets(run_dir)
    assert set(after) == set(UNITS)
    assert {u: after[u] for u in before} == before  # a unit with a packet is never driven again
    for data in after.values():
        assert json.loads(data)["trace"]["status"] == "resolved"
    lines = [line.unit for line in log.lines()]
    assert sorted(lines) == sorted(UNITS)  # one line per unit, none twice
    assert {s.split()[0] for s in seen} | set() <= set(UNITS)
    assert wait_for(lambda: not [p for p in marked(mark) if "--session" in p], timeout=30)
    # once done, calling again starts nothing and repeats nothing
    code, again = drive(str(run_dir), target, 1)
    assert code == 0 and again["status"] == "done" and again["units"] == []


def test_a_drive_can_be_stopped_and_its_units_in_flight_stay_pending(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "slow:2")
    code, made, err = run_cli("new-run", "--id", "MD1,MD2,MD3", "--target", str(target))
    run_dir = Path(made["run_dir"])
    code, first = drive(str(run_dir), target, 0.1)
    assert first["status"] == "running"
    assert wait_for(lambda: [p for p in marked(mark) if "--session" in p], timeout=60)
    code, stopped, err = run_cli("drive", "--run-dir", str(run_dir), "--stop", "--target", str(target))
    assert code == 0 and stopped["status"] == "interrupted", stopped
    assert packets(run_dir) == {}  # the turns in flight were cut short: no packet, still pending
    assert wait_for(lambda: not [p for p in marked(mark) if "--session" in p], timeout=30)
