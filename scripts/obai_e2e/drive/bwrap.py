"""Bubblewrap (``bwrap``) as a turn's jail: its command line for a mount plan, and how it is started.

``bwrap`` makes the turn's PID and mount namespaces from the plan (drive.mount_plan): the machine's
root as it is, the plan's read-only, writable, hidden and private folders over it, ``/sys``
read-only, a ``/proc`` of the namespace (bubblewrap makes its ``sys``, ``sysrq-trigger``, ``irq``
and ``bus`` read-only), every capability dropped, and no_new_privs (bubblewrap always sets it).
Three more of its options carry the rest of the contract:

* ``--new-session``: the namespace's init and the target lead a process group of their own, so a
  SIGTERM to that group reaches the target (init, pid 1 of its namespace, ignores it) and never
  ``bwrap`` itself, whose death ends the namespace at once;
* ``--die-with-parent``: ``bwrap`` dies with the harness thread that started it (a harness killed
  with SIGKILL too), its namespace's init dies with ``bwrap``, and every process of the namespace
  with its init: nothing the turn started outlives either;
* ``--json-status-fd`` and ``--block-fd``: ``bwrap`` names its namespace's init on the status pipe,
  then waits, before it starts the target, until the harness has set the turn's file size limit on
  that init (which the target and all it starts inherit); at the end it writes the target's exit
  code there. A status without one is a setup that failed (the reason is on ``bwrap``'s stderr).

bubblewrap reports a target killed by signal N as exit code 128+N, as a shell does; the harness
records it as -N, the way a signal death is recorded elsewhere (a target that exits with 129–192
itself cannot be told apart from one killed by that signal).
"""
from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .mount_plan import HIDDEN_SIZE, Jail

HANDSHAKE_S = 60.0  # bwrap names its namespace's init within milliseconds; a loaded machine may take longer
SETUP_FAILED = 125  # the exit code recorded when the jail itself could not be set up (as turn_jail.py's)
_MAX_SIGNAL = 64


def find() -> str | None:
    """The ``bwrap`` on this process's PATH, or None."""
    return shutil.which("bwrap")


def version(exe: str) -> str:
    """``bubblewrap 0.8.0`` (its own words), or "bubblewrap" when it does not say."""
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return "bubblewrap"
    words = done.stdout.split()
    return f"bubblewrap {words[-1]}" if done.returncode == 0 and words else "bubblewrap"


def options(jail: Jail, private: tuple[str, ...]) -> list[str]:
    """bwrap's options for ``jail`` (order matters: a later mount lies over an earlier one)."""
    out = ["--dev-bind", "/", "/"]
    for path in jail.ro:
        out += ["--ro-bind", str(path), str(path)]
    for path in jail.rw:
        out += ["--bind", str(path), str(path)]
    for path in jail.hidden:
        out += ["--size", str(HIDDEN_SIZE), "--tmpfs", str(path), "--remount-ro", str(path)]
    if Path("/sys").is_dir():
        out += ["--ro-bind", "/sys", "/sys"]
    out += ["--proc", "/proc"]
    for path in private:
        out += (["--size", str(jail.budget)] if jail.budget else []) + ["--tmpfs", path]
    return out + ["--unshare-pid", "--new-session", "--die-with-parent", "--cap-drop", "ALL"]


@dataclass
class Started:
    """A running ``bwrap``: its process, its namespace's init (None when its setup failed early), a pidfd
    on that init, and the read end of its status pipe."""

    proc: subprocess.Popen
    init: int | None
    init_fd: int | None
    status_fd: int


def start(exe: str, argv: list[str], jail: Jail, private: tuple[str, ...], **popen) -> Started:
    """Start ``argv`` under ``bwrap`` (``popen``: Popen's other arguments) once its init has the file size limit."""
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    block_r, block_w = os.pipe2(os.O_CLOEXEC)
    try:
        proc = subprocess.Popen([exe, *options(jail, private), "--json-status-fd", str(status_w),
                                 "--block-fd", str(block_r), "--", *argv],
                                pass_fds=(status_w, block_r), start_new_session=True, **popen)
    except BaseException:
        for fd in (status_r, block_w):
            os.close(fd)
        raise
    finally:
        os.close(status_w)
        os.close(block_r)
    try:
        init = _init_pid(status_r)
        init_fd = _hold(init)
        if init_fd is not None and jail.budget:
            try:
                resource.prlimit(init, resource.RLIMIT_FSIZE, (jail.budget, jail.budget))
            except ProcessLookupError:
                pass  # its setup failed already: bwrap says why on stderr
    except BaseException:
        os.close(status_r)
        _stop(proc)
        raise
    finally:
        _release(block_w)
    return Started(proc, init if init_fd is not None else None, init_fd, status_r)


def _init_pid(fd: int) -> int | None:
    """The namespace's init as bwrap's first status line names it; None when bwrap ended before naming it."""
    data, deadline = b"", time.monotonic() + HANDSHAKE_S
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"bwrap did not start its namespace within {HANDSHAKE_S:g} s")
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
    try:
        return int(json.loads(data.split(b"\n", 1)[0])["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _hold(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # gone already: its setup failed
        return None


def _release(block_w: int) -> None:
    """Let bwrap go on (a byte on its block pipe), or find it ended already."""
    try:
        os.write(block_w, b"\n")
    except OSError:
        pass
    finally:
        os.close(block_w)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def exit_code(status_fd: int, returncode: int) -> int:
    """The target's exit code (negative: killed by that signal) once bwrap has ended with ``returncode``."""
    reported = None
    for line in _rest(status_fd).splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("exit-code"), int):
            reported = doc["exit-code"]
    if reported is None:  # the target never ran, or bwrap was killed
        return returncode if returncode < 0 else SETUP_FAILED
    if 128 < reported <= 128 + _MAX_SIGNAL:
        return -(reported - 128)
    return reported


def _rest(fd: int) -> str:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    except OSError:  # nothing more right now
        pass
    return b"".join(chunks).decode("utf-8", "replace")
