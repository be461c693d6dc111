"""Driving one turn of the target: a real subprocess with a real timeout.

The target runs in its own process group and session with a mark in its environment.
A timeout kills the group (SIGTERM first, SIGKILL after a grace period); when the target
has ended, every process it left behind (in its group or session, carrying its mark, or
working in its sandbox: a ``setsid`` daemon too) is killed, so nothing outlives the turn.
Output is read on threads so that a child that keeps our pipes open cannot stall the
harness. When the runner is stopping, a turn neither starts nor returns a result.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..base import procs
from ..base.clock import iso, utc_now
from ..base.errors import Interrupted, NotReady
from ..base.procs import STOPPING, alive
from ..base.record import Record

MAX_STDOUT_BYTES = 1_000_000
PIPE_DRAIN_GRACE_S = 1.0


@dataclass(frozen=True)
class _Live:
    pgid: int
    mark: str | None
    under: Path | None
    since: int


# Turns in flight, so a signal handler can end them all.
_LIVE: dict[int, _Live] = {}
_LIVE_LOCK = threading.Lock()


def kill_live_groups() -> None:
    """Kill every process of every turn still in flight (used on SIGTERM/SIGINT)."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    for t in live:
        procs.end_all(mark=t.mark, groups=[t.pgid], sessions=[t.pgid], under=t.under, since_ticks=t.since)


@dataclass
class TurnResult(Record):
    """What one turn of the target did."""

    argv: list[str] = field(default_factory=list)
    exit_code: int | None = None
    stdout: str = ""
    stderr_tail: str = ""
    started_at: str = ""
    ended_at: str = ""
    wall_ms: int = 0
    timed_out: bool = False
    killed: bool = False
    stdout_truncated: bool = False
    stdout_bytes: int = 0
    leftovers_killed: int = 0
    correlation_tag: str | None = None
    timeout_s: float | None = None                      # the timeout this turn ran under
    env: dict[str, str] = field(default_factory=dict)   # the case's own environment (secrets redacted)


def fill(template: list[str], values: Mapping[str, str]) -> list[str]:
    """Replace {name} placeholders in each argv element; no shell is involved."""
    out = []
    for part in template:
        for key, value in values.items():
            part = part.replace("{" + key + "}", value)
        out.append(part)
    return out


class _Reader(threading.Thread):
    def __init__(self, stream, limit: int | None, tail: int | None):
        super().__init__(daemon=True)
        self.stream, self.limit, self.tail = stream, limit, tail
        self.chunks: list[bytes] = []
        self.size = 0
        self.total = 0
        self.truncated = False

    def run(self) -> None:
        try:
            for chunk in iter(lambda: self.stream.read1(65536), b""):
                self.total += len(chunk)
                if self.tail is not None:
                    self.chunks.append(chunk)
                    joined = b"".join(self.chunks)
                    if len(joined) > self.tail:
                        joined = joined[-self.tail:]
                        self.truncated = True
                    self.chunks = [joined]
                elif self.size < (self.limit or 0):
                    keep = chunk[: self.limit - self.size]
                    self.chunks.append(keep)
                    self.size += len(keep)
                    if len(keep) < len(chunk):
                        self.truncated = True
                else:
                    self.truncated = True
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def track_group(pgid: int) -> None:
    """Count a long-lived process group (a web UI server) among those a signal handler kills."""
    entry = procs.stat(pgid)
    with _LIVE_LOCK:
        _LIVE[pgid] = _Live(pgid, None, None, entry.start_ticks if entry else 0)


def untrack_group(pgid: int) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(pgid, None)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass



def run_turn(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    kill_grace_s: float = 2.0,
    stderr_tail_bytes: int = 4000,
    mark: str | None = None,
    under: Path | None = None,
) -> TurnResult:
    """Run ``argv`` to completion or to ``timeout_s``; never raises for the target's own failures.

    ``mark`` goes into the environment (``OBAI_E2E_TURN``) of everything the turn starts;
    processes carrying it, or working under ``under``, are ended with the turn. Raises
    Interrupted when the runner is stopping, before the turn or after it was cut short.
    """
    if STOPPING.is_set():
        raise Interrupted("the run is stopping; this turn was not started")
    if not Path(cwd).is_dir():
        raise NotReady(f"the target's working directory {cwd} does not exist "
                       "(check target.workdir in the target configuration)")
    env = dict(env)
    if mark:
        env[procs.MARK_VAR] = mark
    started = utc_now()
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise NotReady(f"target command not found: {argv[0]!r} (not on PATH, or the path does not exist)") from None
    except PermissionError:
        raise NotReady(f"target command is not executable: {argv[0]!r}") from None
    pgid = proc.pid
    entry = procs.stat(proc.pid)
    live = _Live(pgid, mark, Path(under) if under else None, entry.start_ticks if entry else 0)
    with _LIVE_LOCK:
        _LIVE[pgid] = live
    try:
        result = _supervise(proc, live, argv, started, t0, timeout_s, kill_grace_s, stderr_tail_bytes)
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(pgid, None)
    if STOPPING.is_set():
        raise Interrupted("the run was stopped during this turn; it will be driven again on resume")
    return result


def _end_leftovers(live: _Live) -> int:
    return len(procs.end_all(mark=live.mark, groups=[live.pgid], sessions=[live.pgid], under=live.under,
                             since_ticks=live.since))


def _wait(proc: subprocess.Popen, timeout_s: float) -> None:
    """``proc.wait(timeout)``, woken by the exit itself: Popen's own wait with a timeout
    polls with sleeps of up to 50 ms, which every turn would pay. Raises TimeoutExpired."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (older kernel, not Linux)
        proc.wait(timeout=timeout_s)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        while not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            if time.monotonic() >= deadline:
                if proc.poll() is None:
                    raise subprocess.TimeoutExpired(proc.args, timeout_s)
                break
    finally:
        os.close(fd)
    proc.wait()


def _supervise(proc, live: _Live, argv, started, t0, timeout_s, kill_grace_s, stderr_tail_bytes) -> TurnResult:
    pgid = live.pgid
    out = _Reader(proc.stdout, MAX_STDOUT_BYTES, None)
    err = _Reader(proc.stderr, None, max(stderr_tail_bytes, 1))
    out.start()
    err.start()
    timed_out = killed = False
    try:
        _wait(proc, timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=kill_grace_s)
        except subprocess.TimeoutExpired:
            pass
        killed = True
    finally:
        if not timed_out and proc.poll() is None:  # interrupted by a signal of ours
            _kill_group(pgid, signal.SIGKILL)
            proc.wait()
    if timed_out:
        # Children that ignored SIGTERM (or the target itself) are killed now.
        _kill_group(pgid, signal.SIGKILL)
        proc.wait()
    # The target has ended: whatever it left running (a child still holding our pipes, a
    # daemon in a session of its own) is ended with it.
    leftovers = _end_leftovers(live)
    out.join(PIPE_DRAIN_GRACE_S)
    err.join(0.1)
    if out.is_alive() or err.is_alive() or alive(pgid, group=True):
        _kill_group(pgid, signal.SIGKILL)
        leftovers += _end_leftovers(live)
        killed = killed or out.is_alive()
        out.join(2)
        err.join(2)
    wall_ms = int((time.monotonic() - t0) * 1000)
    return TurnResult(
        argv=list(argv),
        exit_code=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr_tail=err.text(),
        started_at=iso(started),
        ended_at=iso(utc_now()),
        wall_ms=wall_ms,
        timed_out=timed_out,
        killed=killed,
        stdout_truncated=out.truncated,
        stdout_bytes=out.total,
        leftovers_killed=leftovers,
    )
