"""Polling a background drive: start the worker when none runs, wait a bounded time, report.

Driving a whole suite takes minutes, longer than a chat tool lets one command run in the
foreground. So the drive runs as a detached worker process (batch_drive.drive_run) and a
poll waits at most ``wait_s`` for it, then prints the units finished since the previous
poll. The same command again continues where it left off: a worker that died (killed,
machine restarted) is started again and resumes with the units that have no packet.

A worker is trusted as running only while its pid is still that worker (the start time
recorded with it and a worker's command line for this run, not a zombie), and is signalled
only then. It starts with the public part of the environment (base.child_env); what looks
secret and the worker may need (the trace backend's key, a key the target declares) is
written to its standard input and read at its start, so no secret sits in its environment
block, which the agent under test could otherwise read; the seal key and the judges' keys
do not reach it at all: a drive records no verdict and seals nothing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..base import procs
from ..base.modeltext import inline
from ..base.child_env import split_environ
from ..base.seal_key import KEY_ENV as SEAL_KEY_ENV
from ..drive.agent_env import judge_keys
from ..drive.sandbox import turn_mark_prefix
from ..rundir.meta import load_run
from .drive_log import DONE, FAILED, RUNNING, DriveLog, DriveState, latest, tally

POLL_S = 0.25
UNITS_CHARS = 20_000  # the unit lines of one poll, at most; the rest wait for the next poll
ERROR_CHARS = 1000
STOP_WAIT_S = 60
# The folder that holds the obai_e2e package, for the worker's sys.path.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]


def worker_environ(environ) -> tuple[dict[str, str], dict[str, str]]:
    """(the worker's environment, what it reads from its standard input): see the module's note."""
    env, held = split_environ(environ)
    for name in (SEAL_KEY_ENV, *judge_keys()):
        held.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env, held


def _spawn(log: DriveLog, argv: list[str]) -> subprocess.Popen:
    log.dir.mkdir(exist_ok=True)
    env, held = worker_environ(os.environ)
    with open(log.log_path, "ab") as err:
        proc = subprocess.Popen([sys.executable, "-m", "obai_e2e", *argv], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True)
    try:
        proc.stdin.write(json.dumps(held).encode("utf-8"))
        proc.stdin.close()
    except OSError:
        pass  # it ended before reading: the poll reports its exit
    return proc


def poll(run_dir: Path, worker_argv: list[str], wait_s: float) -> tuple[int, dict]:
    """(exit code, report) after waiting at most ``wait_s`` seconds for the drive of ``run_dir``."""
    run_dir = Path(run_dir)
    meta = load_run(run_dir)  # a bad run directory is refused here, not in the background
    log = DriveLog(run_dir)
    t0 = time.monotonic()
    state = log.state()
    proc = None
    if not log.worker_alive(state) and (state is None or state.status != DONE):
        proc = _spawn(log, worker_argv)
    code = 0
    while True:
        state = log.state()
        if proc is not None:
            if proc.poll() is not None:  # the worker this poll started has ended
                code = proc.returncode
                if state is None or state.pid != proc.pid:  # it never got going
                    state = DriveState(pid=proc.pid, status=FAILED, jobs=0, started_at="",
                                       error=log.log_tail() or f"the drive worker exited with {code}")
                break
        elif not log.worker_alive(state):
            break
        if time.monotonic() - t0 >= wait_s:
            if proc is not None and (state is None or state.pid != proc.pid):  # still starting
                state = DriveState(pid=proc.pid, status=RUNNING, jobs=0, started_at="")
            break
        time.sleep(POLL_S)
    return report(run_dir, log, state, total=len(meta.units), worker_code=code)


def _unshown(lines: list, shown: int) -> list[str]:
    """The texts of the lines after the first ``shown``, as many as fit ``UNITS_CHARS``."""
    texts, size = [], 0
    for line in lines[shown:]:
        text = line.text()
        if texts and size + len(text) > UNITS_CHARS:
            break
        texts.append(text)
        size += len(text) + 4
    return texts


def report(run_dir: Path, log: DriveLog, state: DriveState | None, *, total: int, worker_code: int = 0) -> tuple[int, dict]:
    lines = log.lines()
    shown = min(log.shown(), len(lines))
    new = _unshown(lines, shown)
    log.mark_shown(shown + len(new))
    status = state.status if state is not None else RUNNING
    if status == RUNNING and not log.worker_alive(state):
        status = "stopped"
    out: dict = {"status": status, "run_dir": str(run_dir), "units": new,
                 "driven": f"{len(latest(lines))} of {total} units have a packet and a check"}
    left = len(lines) - shown - len(new)
    if left:
        out["not_listed"] = (f"{left} more driven units (the lines of a call stop at {UNITS_CHARS:,} characters): "
                             "the same command again lists them")
    if status == DONE:
        out["count"] = f"{len(latest(lines))} units driven: {tally(lines)}"
        out["next"] = "every unit is driven; go on with the next step"
    elif status == RUNNING:
        out["next"] = "the drive goes on in the background: run the same command again"
    else:
        out["error"] = inline((state.error if state is not None else None) or log.log_tail(), ERROR_CHARS)
        out["next"] = "run the same command again to resume; units in flight stay pending"
    if left and status == DONE:
        out["next"] = "run the same command again to list the other driven units"
    if status == FAILED:
        return (worker_code or 2), out
    return 0, out


def stop(run_dir: Path) -> tuple[int, dict]:
    """Stop a running worker (SIGTERM: its turns get their grace, then SIGKILL; units in flight stay pending).

    Returns once the worker has ended and no process of the run's turns is left: what outlasts
    ``STOP_WAIT_S`` is killed."""
    meta = load_run(run_dir)
    log = DriveLog(run_dir)
    state = log.state()
    t0 = time.monotonic()
    if log.worker_alive(state) and procs.signal_ours(state.pid, state.start_ticks,
                                                     state.worker_marker(log.run_dir), signal.SIGTERM):
        while log.worker_alive(log.state()) and time.monotonic() - t0 < STOP_WAIT_S:
            time.sleep(POLL_S)
    mark = turn_mark_prefix(meta.run_id)
    while procs.members(mark=mark) and time.monotonic() - t0 < STOP_WAIT_S:
        time.sleep(POLL_S)
    procs.end_all(mark=mark)
    return report(Path(run_dir), log, log.state(), total=len(meta.units))

