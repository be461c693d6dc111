"""A sandbox's teardown ends what its turns left, and looks again only where a turn's own end did not."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from obai_e2e.base import procs
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.sandbox import Sandbox
from obai_e2e.drive.turn import run_turn

pytestmark = pytest.mark.skipif(not procs.has_table(), reason="needs /proc")

# Leaves a grandchild in a session of its own, working in the turn's folder, then exits.
LEAVES_DAEMON = r"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(300)
        os._exit(0)
    os._exit(0)
os.wait()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("answer", flush=True)
"""


def gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = procs.stat(pid)
        if entry is None or entry.state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def box(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    config = load_target_config()
    with Sandbox(config, "sweep-test", dict(os.environ)) as sandbox:
        yield sandbox


def marked_sleeper(box: Sandbox, mark: str) -> subprocess.Popen:
    """A process carrying a turn's mark in a session of its own, outside the sandbox's folder."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], cwd="/",
                            env={**os.environ, procs.MARK_VAR: mark}, start_new_session=True,
                            stdin=subprocess.DEVNULL)
    # Until it has exec'd, the child shows its parent's environment without the mark: on a busy machine a
    # sweep could look in that moment. Wait until the mark is visible, as it is for a turn's processes.
    deadline = time.monotonic() + 60
    while proc.pid not in procs.members(mark=mark) and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc


def ended_by_teardown(box: Sandbox, sleeper: subprocess.Popen) -> bool:
    try:
        box.teardown()
        return gone(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_turn_that_ended_without_its_own_look_is_swept_at_teardown(box):
    sleeper = marked_sleeper(box, box.next_mark())  # the turn started; its end never came
    assert ended_by_teardown(box, sleeper)


def test_one_unswept_turn_among_swept_ones_is_enough_to_look_again(box):
    sleeper = marked_sleeper(box, box.next_mark())
    box.next_mark()
    box.turn_swept()  # the second turn's end found none of its own; the first never looked
    assert ended_by_teardown(box, sleeper)


def test_a_turns_own_end_kills_its_daemon_and_reports_the_clean_look(box, tmp_path):
    pidfile = tmp_path / "daemon.pid"
    swept: list[bool] = []
    res = run_turn([sys.executable, "-c", LEAVES_DAEMON, str(pidfile)], env=box.env(), cwd=box.workdir,
                   timeout_s=60, mark=box.next_mark(), under=box.folder, on_swept=lambda: swept.append(True))
    daemon = int(pidfile.read_text())
    assert res.exit_code == 0 and res.stdout == "answer\n"
    assert res.leftovers_killed >= 1 and gone(daemon)
    assert swept == [True]


def test_a_turn_cut_short_by_its_timeout_still_reports_its_look(box):
    swept: list[bool] = []
    res = run_turn([sys.executable, "-c", "import time; time.sleep(300)"], env=box.env(), cwd=box.workdir,
                   timeout_s=0.5, kill_grace_s=0.2, mark=box.next_mark(), under=box.folder,
                   on_swept=lambda: swept.append(True))
    assert res.timed_out and swept == [True]
