"""Processes: whether one still exists, and finding and ending everything a turn started.

A turn's processes are found four ways, since each alone misses some: its process group
and its session (a child that calls ``setsid`` leaves both), the mark the harness puts in
the turn's environment (inherited by every descendant that does not scrub its
environment), and a working directory under the turn's sandbox. The process table is
read from ``/proc``; where there is none only the group and session are signalled.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

MARK_VAR = "OBAI_E2E_TURN"
_PROC = Path("/proc")

# Set when the runner was told to stop (SIGINT, SIGTERM): no new turn starts, and work in
# progress ends without recording a result, so the unit stays pending for a resume.
STOPPING = threading.Event()


def alive(pid: int, *, group: bool = False) -> bool:
    """Signal 0 to ``pid`` (or to the group ``pid`` leads); one we may not signal still exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Proc:
    """One line of the process table."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start_ticks: int


def has_table() -> bool:
    return (_PROC / "self" / "stat").exists()


def _read(path: str) -> bytes | None:
    """A small /proc file at once (no Path objects: the table is read for every process)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat_fields(path: str) -> list[bytes] | None:
    """The fields of a ``/proc/.../stat`` line after the command name (state, ppid, pgid, sid,
    …), or None when it is gone. One read: the line is far shorter than the buffer, and the
    kernel hands it over whole."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # The command name is in parentheses and may itself hold spaces and parentheses.
    return raw[raw.rfind(b")") + 2:].split() if raw else None


def thread_start_ticks() -> int:
    """When the calling thread started, on the clock of the table's start times (0 without
    /proc): a process started by this thread from now on started at or after it."""
    fields = _stat_fields(f"/proc/self/task/{threading.get_native_id()}/stat")
    try:
        return int(fields[19]) if fields else 0
    except (IndexError, ValueError):
        return 0


def stat(pid: int) -> Proc | None:
    """The process table entry of ``pid``, or None when it is gone (or there is no /proc)."""
    fields = _stat_fields(f"/proc/{pid}/stat")
    if fields is None:
        return None
    try:
        return Proc(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]),
                    state=fields[0].decode("ascii", "replace"), start_ticks=int(fields[19]))
    except (IndexError, ValueError):
        return None


def own_start_ticks() -> int:
    """When this process started (clock ticks since boot; 0 without /proc): recorded with its pid, it
    tells this process from a later one that was given the same pid."""
    entry = stat(os.getpid())
    return entry.start_ticks if entry is not None else 0


def is_ours(pid: int, start_ticks: int | None, marker: bytes) -> bool:
    """Whether ``pid`` is still the live process that was recorded with it: started at ``start_ticks``
    (when recorded) and with ``marker`` in its command line. A zombie, a process started later with
    the same pid, or one that is not the harness's own is not. Without a process table (no
    /proc) only whether ``pid`` exists can be known."""
    if not has_table():
        return alive(pid)
    entry = stat(pid)
    if entry is None or entry.state in ("Z", "X"):
        return False
    if start_ticks is not None and entry.start_ticks != start_ticks:
        return False
    cmdline = _read(f"/proc/{pid}/cmdline")
    return cmdline is not None and marker in cmdline


def signal_ours(pid: int, start_ticks: int | None, marker: bytes, sig: int) -> bool:
    """Send ``sig`` to ``pid`` only when it is the process recorded (see :func:`is_ours`); whether it was sent.

    The process is held by a pidfd while it is checked, so it cannot be replaced by another
    one between the check and the signal."""
    if not has_table():  # nothing to check the pid against: signalled as before
        try:
            os.kill(pid, sig)
            return True
        except OSError:
            return False
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return False
    try:
        if not is_ours(pid, start_ticks, marker):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def carries_mark(pid: int, mark: str) -> bool:
    """Whether ``pid``'s environment holds a turn mark starting with ``mark`` (see MARK_VAR)."""
    return _environ_has(pid, f"{MARK_VAR}={mark}".encode())


def _environ_has(pid: int, entry_prefix: bytes) -> bool:
    data = _read(f"/proc/{pid}/environ")
    if data is None:
        return False
    return data.startswith(entry_prefix) or (b"\0" + entry_prefix) in data


def _cwd_under(pid: int, root: str) -> bool:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return cwd == root or cwd.startswith(root + os.sep)


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        entry = stat(pid)
        if entry is None:
            break
        pid = entry.ppid
    return out


def last_pid() -> int | None:
    """The pid most recently handed out in this pid namespace (``/proc/loadavg``), or None."""
    data = _read("/proc/loadavg")
    try:
        return int(data.split()[4]) if data else None
    except (IndexError, ValueError):
        return None


def members(*, mark: str | None = None, groups: Iterable[int] = (), sessions: Iterable[int] = (),
            under: Path | None = None, since_ticks: int = 0, from_pid: int | None = None) -> list[int]:
    """Live processes of a turn: in one of ``groups`` or ``sessions``, carrying ``mark`` (a
    prefix of the value of ``OBAI_E2E_TURN``) in their environment, or working under
    ``under``. Environments and working directories are read only for processes started
    at or after ``since_ticks`` (clock ticks since boot). Never this process or its parents.

    ``from_pid``: every process sought was started by the one with this pid or after it.
    The kernel hands out pids in rising order until they wrap around at the top; as long
    as the last pid handed out is not below ``from_pid`` they have not wrapped since, and
    the processes below ``from_pid`` are not read at all. (Wrapping and climbing back past
    ``from_pid`` within one turn would take as many forks as the pid space holds.)
    """
    if not has_table():
        return []
    floor = 0
    if from_pid is not None:
        latest = last_pid()
        if latest is not None and latest >= from_pid:
            floor = from_pid
    groups, sessions = set(groups), set(sessions)
    prefix = f"{MARK_VAR}={mark}".encode() if mark else None
    root = str(Path(under).resolve()) if under is not None else None
    mine: set[int] | None = None  # read when a candidate turns up: most looks find none
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid < floor:
            continue
        # stat()'s fields read in place, without a Proc: this runs for every process of the machine.
        fields = _stat_fields(f"/proc/{name}/stat")
        if fields is None:
            continue
        try:
            state, pgid, sid, start_ticks = fields[0], int(fields[2]), int(fields[3]), int(fields[19])
        except (IndexError, ValueError):
            continue
        if state in (b"Z", b"X"):  # a zombie is already dead; its parent reaps it
            continue
        if pgid in groups or sid in sessions or (start_ticks >= since_ticks and (
                (prefix is not None and _environ_has(pid, prefix)) or (root is not None and _cwd_under(pid, root)))):
            if mine is None:
                mine = _ancestors()
            if pid not in mine:
                found.append(pid)
    return found


@dataclass(frozen=True)
class Sweep:
    """What :func:`sweep` did: the pids it killed, and whether its last look found none left."""

    killed: list[int]
    clean: bool


def sweep(*, mark: str | None = None, groups: Iterable[int] = (), sessions: Iterable[int] = (),
          under: Path | None = None, since_ticks: int = 0, from_pid: int | None = None,
          rounds: int = 5) -> Sweep:
    """SIGKILL every process ``members`` finds, again until none is left (a dying parent's
    children may fork meanwhile), for at most ``rounds`` looks."""
    groups, sessions = list(groups), list(sessions)
    killed: list[int] = []
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for _ in range(rounds):
        found = members(mark=mark, groups=groups, sessions=sessions, under=under, since_ticks=since_ticks,
                        from_pid=from_pid)
        if not found:
            return Sweep(killed, clean=has_table())
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    return Sweep(killed, clean=False)


def end_all(*, mark: str | None = None, groups: Iterable[int] = (), sessions: Iterable[int] = (),
            under: Path | None = None, since_ticks: int = 0, rounds: int = 5) -> list[int]:
    """:func:`sweep`, for the pids it killed."""
    return sweep(mark=mark, groups=groups, sessions=sessions, under=under, since_ticks=since_ticks,
                 rounds=rounds).killed
