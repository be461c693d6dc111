"""Finding and ending every process a turn started, from the real process table."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from obai_e2e.base import procs

pytestmark = pytest.mark.skipif(not procs.has_table(), reason="needs /proc")

# Forks a grandchild in a new session (it leaves the turn's group and session), prints its
# pid, then sleeps.
ESCAPER = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
        os._exit(0)
    os._exit(0)
os.wait()
print("ready", flush=True)
time.sleep(300)
"""


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def spawn(env_extra: dict, cwd=None) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", ESCAPER], env={**os.environ, **env_extra}, cwd=cwd,
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdout.readline().strip() == b"ready"
    return proc


def test_stat_reads_odd_command_names():
    proc = subprocess.Popen([sys.executable, "-c",
                             "open('/proc/self/comm','w').write('a) b (c'); print('x', flush=True); import time; "
                             "time.sleep(30)"], stdout=subprocess.PIPE, start_new_session=True)
    try:
        proc.stdout.readline()
        entry = procs.stat(proc.pid)
        assert entry is not None and entry.pgid == proc.pid == entry.sid and entry.ppid == os.getpid()
        assert entry.state in "RSD"
    finally:
        proc.kill()
        proc.wait()
    assert procs.stat(proc.pid) is None


def test_a_setsid_grandchild_is_found_by_the_mark_and_ended():
    mark = f"t-{uuid.uuid4().hex}"
    since = procs.stat(os.getpid()).start_ticks
    proc = spawn({procs.MARK_VAR: f"{mark}:1"})
    try:
        by_group = procs.members(groups=[proc.pid], sessions=[proc.pid])
        by_mark = procs.members(mark=mark, since_ticks=since)
        assert by_group == [proc.pid]  # the grandchild left both
        escaped = [p for p in by_mark if p != proc.pid]
        assert len(escaped) == 1 and procs.stat(escaped[0]).sid != proc.pid
        killed = procs.end_all(mark=mark, groups=[proc.pid], sessions=[proc.pid])
        assert escaped[0] in killed
        proc.wait(timeout=10)
        assert wait_for(lambda: not procs.members(mark=mark))
    finally:
        procs.end_all(mark=mark)
        proc.kill()
        proc.wait()


def test_processes_working_under_a_folder_are_found(tmp_path):
    box = tmp_path / "box"
    (box / "work").mkdir(parents=True)
    proc = spawn({}, cwd=box / "work")
    try:
        found = procs.members(under=box)
        assert proc.pid in found and len(found) == 2
        procs.end_all(under=box)
        proc.wait(timeout=10)
        assert wait_for(lambda: not procs.members(under=box))
    finally:
        procs.end_all(under=box)
        proc.kill()
        proc.wait()


def test_never_this_process_or_its_parents():
    os.environ[procs.MARK_VAR] = "self-mark"
    try:
        assert os.getpid() not in procs.members(mark="self-mark", sessions=[os.getsid(0)],
                                                groups=[os.getpgid(0)])
    finally:
        del os.environ[procs.MARK_VAR]


def test_a_look_from_a_pid_reads_only_what_started_after_it_unless_pids_wrapped():
    mark = f"t-{uuid.uuid4().hex}"
    proc = spawn({procs.MARK_VAR: f"{mark}:1"})
    try:
        everything = procs.members(mark=mark)
        assert proc.pid in everything and len(everything) == 2  # the turn's leader and its escaped grandchild
        # Looking from the leader's pid finds both: the grandchild started after it.
        assert sorted(procs.members(mark=mark, from_pid=proc.pid)) == sorted(everything)
        # Processes below the pid looked from are not the turn's, as long as pids have not wrapped ...
        later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], stdin=subprocess.DEVNULL)
        assert later.pid > max(everything) and procs.last_pid() >= later.pid
        assert procs.members(mark=mark, from_pid=later.pid) == []
        # ... and once the last pid handed out is below it, they have: everything is read again.
        wrapped = procs.last_pid() + 1_000_000
        assert sorted(procs.members(mark=mark, from_pid=wrapped)) == sorted(everything)
    finally:
        procs.end_all(mark=mark)
        proc.kill()
        proc.wait()
        if "later" in locals():
            later.kill()
            later.wait()
