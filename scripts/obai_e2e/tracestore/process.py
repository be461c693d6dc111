"""The store's server as an operating-system process: is it alive, is it ours, end it.

Enters: a pid (and the store directory it should serve). Leaves: yes/no answers, or a
process that is gone after SIGTERM, then SIGKILL.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from ..base.procs import alive


def reap(pid: int) -> None:
    """Collect ``pid`` if it is an exited child of this process (a zombie still 'exists')."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def pid_alive(pid: int) -> bool:
    reap(pid)
    return alive(pid)


def process_args(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        pass
    try:
        done = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout


def is_store_process(pid: int, store_dir: Path) -> bool:
    """Whether ``pid`` is a background server of this store (and not a recycled pid)."""
    args = process_args(pid)
    return "traces serve" in args and str(store_dir) in args


def terminate(pid: int, timeout_s: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
