"""The drive's state read back and acted on: a pid is the worker's own before it counts as running or is
signalled; a zombie is no worker; a run deleted under its worker stays deleted; the worker holds no secret
in its environment. Real processes, no turn of an agent (each test costs a process start or two)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from obai_e2e.base import procs
from obai_e2e.run.drive_log import DONE, RUNNING, DriveLog, DriveState, UnitLine
from obai_e2e.run.drive_poll import report, stop, worker_environ

from .conftest import REPO

DEMO_RUN = REPO / "tests" / "judging" / "data" / "demo-run"


@pytest.fixture
def run_dir(tmp_path) -> Path:
    run = tmp_path / "runs" / "2026-01-01" / "000000"
    shutil.copytree(DEMO_RUN, run, ignore=shutil.ignore_patterns("judging", ".runner*"))
    return run.resolve()


def sleeper(*argv: str) -> subprocess.Popen:
    """A process that sleeps with ``argv`` after its own in its command line."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv],
                            stdin=subprocess.DEVNULL, start_new_session=True)


def state_of(proc: subprocess.Popen, **kw) -> DriveState:
    entry = procs.stat(proc.pid)
    return DriveState(pid=proc.pid, status=RUNNING, jobs=1, started_at="", start_ticks=entry.start_ticks, **kw)


def write_state(log: DriveLog, state: DriveState) -> None:
    log.dir.mkdir(exist_ok=True)
    log.end(state, RUNNING)


def test_stop_signals_no_process_a_stale_state_file_names(run_dir):
    log = DriveLog(run_dir)
    other = sleeper("an unrelated service")  # the pid a stale state file names, now someone else's
    try:
        write_state(log, DriveState(pid=other.pid, status=RUNNING, jobs=1, started_at=""))
        code, out = stop(run_dir)
        time.sleep(0.2)
        assert other.poll() is None, "an unrelated process was signalled"
        assert out["status"] == "stopped"
    finally:
        other.kill()
        other.wait()


def test_stop_ends_the_worker_it_recorded_and_only_while_it_is_that_process(run_dir):
    log = DriveLog(run_dir)
    worker = sleeper("drive", "--worker", "--run-dir", str(run_dir))
    try:
        state = state_of(worker)
        # the same pid with another start time: a process that was given the worker's pid later
        write_state(log, DriveState(pid=worker.pid, status=RUNNING, jobs=1, started_at="",
                                    start_ticks=state.start_ticks - 1))
        stop(run_dir)
        assert worker.poll() is None
        write_state(log, state)
        assert log.worker_alive(log.state())
        stop(run_dir)
        assert worker.wait(timeout=30) == -signal.SIGTERM
    finally:
        worker.kill()
        worker.wait()


def test_a_stale_pid_is_not_a_running_worker(run_dir):
    log = DriveLog(run_dir)
    other = sleeper("not a worker")
    try:
        write_state(log, state_of(other))  # right start time, but no worker of this run
        assert not log.worker_alive(log.state())
        code, out = report(run_dir, log, log.state(), total=5)
        assert out["status"] == "stopped" and "run the same command again" in out["next"]
    finally:
        other.kill()
        other.wait()


def test_a_zombie_worker_is_not_alive(run_dir):
    log = DriveLog(run_dir)
    worker = subprocess.Popen([sys.executable, "-c", "pass", "drive", "--worker", "--run-dir", str(run_dir)])
    state = state_of(worker)
    deadline = time.monotonic() + 30
    while procs.stat(worker.pid).state != "Z" and time.monotonic() < deadline:  # exited, not reaped yet
        time.sleep(0.01)
    assert procs.stat(worker.pid).state == "Z"
    write_state(log, state)
    assert not log.worker_alive(log.state())
    worker.wait()


def test_a_run_deleted_under_its_worker_is_not_brought_back(run_dir):
    log = DriveLog(run_dir)
    state = log.start(1, 5)
    shutil.rmtree(run_dir)
    with pytest.raises(FileNotFoundError):
        log.add(UnitLine(unit="MD1", verdict="pass"))
    log.mark_shown(3)
    log.end(state, DONE)
    assert not run_dir.exists()


def test_planted_state_files_are_no_state(run_dir):
    log = DriveLog(run_dir)
    log.dir.mkdir()
    os.mkfifo(log.state_path)  # a FIFO: reading it would wait for a writer
    os.mkfifo(log.units_path)
    os.symlink("/etc/passwd", log.log_path)
    assert log.state() is None and log.lines() == [] and log.log_tail() == ""


def test_the_worker_starts_with_no_secret_in_its_environment():
    environ = {"PATH": "/usr/bin", "HOME": "/root", "OBAI_E2E_SEAL_KEY": "seal", "ANTHROPIC_API_KEY": "judge",
               "OPIK_API_KEY": "backend", "MY_SERVICE_TOKEN": "declared", "DB_PASSWORD": "pw", "LANG": "C.UTF-8"}
    env, held = worker_environ(environ)
    assert {k for k in env if k not in ("PYTHONPATH", "PYTHONUNBUFFERED")} == {"PATH", "HOME", "LANG"}
    # what it may pass on to an agent reaches it by its standard input; the seal and judge keys not at all
    assert "OBAI_E2E_SEAL_KEY" not in held and "ANTHROPIC_API_KEY" not in held
    assert held["OPIK_API_KEY"] == "backend" and held["MY_SERVICE_TOKEN"] == "declared"
