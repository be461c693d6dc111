"""Ctrl-C at any moment of ``obai-e2e run``, from its first import on: exit 130, the command that
resumes, never a traceback; the same command again resumes the unfinished run and drives no
finished unit twice.

The agent is the tiny hostile one (tests/agents/hostile_agent.py): a turn is a Python start.
"""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .hostile_helpers import cli, hostile_target, marked, run_cli, run_dirs, sandboxes, wait_for

pytestmark = pytest.mark.slow

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def handles_sigterm(pid: int) -> bool:
    """Whether the process has installed a SIGTERM handler (Python itself installs none): the
    harness's handler is in place, a few milliseconds into the process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & SIGTERM_BIT)


def stop_when(args: tuple[str, ...], moment) -> tuple[int, str, str]:
    """Start ``obai-e2e ARGS``, wait for ``moment()`` (polled), send SIGINT; (exit code, stdout, stderr)."""
    proc = cli(*args)
    assert wait_for(lambda: handles_sigterm(proc.pid) or proc.poll() is not None, 60, step=0.005)
    assert wait_for(lambda: moment() or proc.poll() is not None, 120, step=0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode("utf-8", "replace")


def test_a_stop_at_any_moment_exits_130_with_the_command_that_resumes(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "slow:0.5")
    args = ("run", "--id", "MD1,MD2,MD3", "--no-html", "--target", str(target))
    before = set(run_dirs(harness_env))

    def after(seconds: float):
        t0 = time.monotonic()
        return lambda: time.monotonic() - t0 >= seconds

    moments = {  # as the handler is installed, among the imports, once the run exists, during a turn
        "installed": lambda: True, "importing": after(0.3),
        "run made": lambda: bool(set(run_dirs(harness_env)) - before),
        "turn": lambda: any("--session" in line for line in marked(mark))}
    outcomes = []
    for name, moment in moments.items():
        code, out, err = stop_when(args, moment)
        delay = name
        outcomes.append((name, code))
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (delay, err[-3000:])
        assert code == 130, (delay, code, err[-2000:])
        made = sorted(set(run_dirs(harness_env)) - before)
        if "Resume with:" in err:
            data = json.loads(out)
            assert data["error"] == "interrupted" and data["resume_command"] in err
            assert data["resume_command"] == f"obai-e2e run --resume {data['run_dir']} --target {target} --no-html"
        else:
            assert "obai-e2e: interrupted" in err
        assert len(made) <= 1, made  # a stopped run is resumed by the same command, never a second one
        assert wait_for(lambda: not marked(mark), 10), marked(mark)
    assert len(set(run_dirs(harness_env)) - before) == 1, outcomes
    run_dir = (set(run_dirs(harness_env)) - before).pop()
    judged = {p.name: p.stat().st_mtime_ns for p in run_dir.glob("*.verdict.json")}
    code, out, err = run_cli(*args)
    assert code == 0, err[-2000:]
    assert f"resuming {run_dir}" in err and Path(out["run_dir"]) == run_dir
    assert set(run_dirs(harness_env)) - before == {run_dir}
    for name, mtime in judged.items():  # finished units were not driven or judged again
        assert (run_dir / name).stat().st_mtime_ns == mtime
    assert not sandboxes(harness_env)


def test_sigterm_mid_turn_names_the_command_too(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "slow:30", **{"target.timeout_s": 120})
    args = ("run", "--id", "MD1", "--no-html", "--jobs", "2", "--target", str(target))
    before = set(run_dirs(harness_env))
    proc = cli(*args)
    assert wait_for(lambda: any("--session" in line for line in marked(mark)), 90), "the agent never started"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err.decode()
    data = json.loads(out)
    assert data["resume_command"] == (f"obai-e2e run --resume {data['run_dir']} --jobs 2 --target {target} "
                                      "--no-html")
    assert not marked(mark) and not sandboxes(harness_env)
    assert set(run_dirs(harness_env)) - before == {Path(data["run_dir"])}
    assert not list(Path(data["run_dir"]).glob("MD1*.json"))  # the unit in flight stays pending
