"""Driving a turn: real subprocesses, real timeouts, whole process groups killed."""
import os
import sys
import time

import pytest
from obai_e2e.base.errors import NotReady
from obai_e2e.drive.turn import fill, run_turn

PY = sys.executable

STUBBORN = r"""
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('child up', flush=True); time.sleep(600)"])
open(sys.argv[1], "w").write(str(child.pid))
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("parent up", flush=True)
time.sleep(600)
"""

LEAVES_PIPE_OPEN = r"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1], "w").write(str(child.pid))
print("answer", flush=True)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


# A kill or an exit is awaited for up to this long; success returns at once, so only a
# failure pays it, and a busy machine cannot turn a slow reap into one.
REAP_S = 15


def test_timeout_kills_the_whole_group_including_sigterm_ignorers(tmp_path):
    pidfile = tmp_path / "child.pid"
    t0 = time.monotonic()
    res = run_turn([PY, "-c", STUBBORN, str(pidfile)], env=os.environ, cwd=tmp_path, timeout_s=1.5, kill_grace_s=0.5)
    took = time.monotonic() - t0
    assert res.timed_out and res.killed and res.exit_code is None
    assert "parent up" in res.stdout
    assert took < 30  # without the group kill it would wait for the 600 s sleep
    child = int(pidfile.read_text())
    deadline = time.monotonic() + REAP_S
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_child_holding_the_pipe_does_not_stall_the_harness(tmp_path):
    pidfile = tmp_path / "child.pid"
    t0 = time.monotonic()
    res = run_turn([PY, "-c", LEAVES_PIPE_OPEN, str(pidfile)], env=os.environ, cwd=tmp_path, timeout_s=120)
    assert time.monotonic() - t0 < 60  # a stall would last until the 120 s timeout
    assert res.exit_code == 0 and not res.timed_out
    assert res.stdout.strip() == "answer"
    child = int(pidfile.read_text())
    deadline = time.monotonic() + REAP_S
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_exit_code_stdout_and_bounded_stderr(tmp_path):
    script = "import sys; print('out'); sys.stderr.write('x' * 10000 + 'TAIL'); sys.exit(7)"
    res = run_turn([PY, "-c", script], env=os.environ, cwd=tmp_path, timeout_s=30, stderr_tail_bytes=100)
    assert res.exit_code == 7 and res.stdout == "out\n"
    assert len(res.stderr_tail) == 100 and res.stderr_tail.endswith("TAIL")
    assert res.wall_ms >= 0 and res.started_at.endswith("Z")


def test_missing_command_is_a_clear_error(tmp_path):
    with pytest.raises(NotReady, match="target command not found: 'no-such-agent-cli'"):
        run_turn(["no-such-agent-cli"], env=os.environ, cwd=tmp_path, timeout_s=5)


def test_fill_is_argv_not_shell():
    argv = fill(["agent", "ask", "--session", "{session}", "{query}"], {"query": "a; rm -rf / $(x)", "session": "s1"})
    assert argv == ["agent", "ask", "--session", "s1", "a; rm -rf / $(x)"]


BOTH_PIPES = r"""
import os, sys
for _ in range(40):  # far more than a pipe holds, on both pipes in turn
    os.write(2, b"e" * 16384)
    os.write(1, b"o" * 16384)
os.write(2, b"END")
"""


def test_both_pipes_fuller_than_a_pipe_holds_are_read_as_they_come(tmp_path):
    res = run_turn([PY, "-c", BOTH_PIPES], env=os.environ, cwd=tmp_path, timeout_s=60, stderr_tail_bytes=50)
    assert res.exit_code == 0 and not res.timed_out and not res.killed
    assert res.stdout == "o" * (40 * 16384) and res.stdout_bytes == 40 * 16384 and not res.stdout_truncated
    assert res.stderr_tail == "e" * 47 + "END"


def test_without_pidfd_the_exit_is_still_seen(tmp_path, monkeypatch):
    # Kernels before 5.3 (and other systems) have no pidfd: the exit is asked for instead.
    def no_pidfd(pid, flags=0):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    t0 = time.monotonic()
    res = run_turn([PY, "-c", "print('out')"], env=os.environ, cwd=tmp_path, timeout_s=60)
    assert res.exit_code == 0 and res.stdout == "out\n" and time.monotonic() - t0 < 30
    res = run_turn([PY, "-c", "import time; time.sleep(300)"], env=os.environ, cwd=tmp_path, timeout_s=0.5,
                   kill_grace_s=0.2)
    assert res.timed_out and res.killed and res.exit_code is None
