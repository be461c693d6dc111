"""Driving one turn of the target: a real subprocess with a real timeout.

The target runs in its own process group and session with a mark in its environment.
A timeout kills the group (SIGTERM first, SIGKILL after a grace period); when the target
has ended, every process it left behind (in its group or session, carrying its mark, or
working in its sandbox: a ``setsid`` daemon too) is killed, so nothing outlives the turn.
Output is read as it comes, in the supervising thread, so that a child that keeps our
pipes open cannot stall the harness. When the runner is stopping, a turn neither starts
nor returns a result.
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
from typing import Callable, Mapping

from ..base import procs
from ..base.clock import iso, utc_now
from ..base.errors import Interrupted, NotReady
from ..base.procs import STOPPING, alive
from ..base.record import Record
from .containment import Jail, contained_argv

MAX_STDOUT_BYTES = 1_000_000
PIPE_DRAIN_GRACE_S = 1.0


@dataclass(frozen=True)
class _Live:
    pgid: int | None
    mark: str | None
    under: Path | None
    since: int


# Turns in flight, and the long-lived processes of a run (a web UI server, the browser), so
# that a signal handler can end them all.
_LIVE: dict[object, _Live] = {}
_LIVE_LOCK = threading.Lock()


def kill_live_groups() -> None:
    """Kill every process of every turn still in flight, and of what track() names (used on SIGTERM/SIGINT)."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    for t in live:
        groups = [t.pgid] if t.pgid else []
        procs.end_all(mark=t.mark, groups=groups, sessions=groups, under=t.under, since_ticks=t.since)


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
    contained: bool = False                             # ran in namespaces of its own (drive.containment)
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


class _Sink:
    """What one pipe gave: its first ``limit`` bytes, or (``tail``) its last ``tail`` bytes."""

    def __init__(self, *, limit: int | None = None, tail: int | None = None):
        self.limit, self.tail = limit, tail
        self.data = bytearray()
        self.total = 0
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.tail is not None:
            self.data += chunk
            if len(self.data) > self.tail:
                del self.data[: len(self.data) - self.tail]
                self.truncated = True
            return
        room = (self.limit or 0) - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _Watch:
    """The turn's two pipes and its exit, watched by one ``poll`` in the supervising thread.

    The exit is seen through a pidfd where the kernel offers one; elsewhere ``proc.poll()``
    is asked at least every ``_TICK_S``. A pipe is read whenever it has data, so a target
    that writes more than a pipe holds never blocks, and one still holding a pipe after
    its exit (a child that inherited it) cannot stall the harness: the pipes are given up
    when their grace is over.
    """

    _TICK_S = 0.05

    def __init__(self, proc: subprocess.Popen, sinks: dict[int, _Sink]):
        self.proc = proc
        self.sinks = sinks
        self.poller = select.poll()
        for fd in sinks:
            os.set_blocking(fd, False)
            self.poller.register(fd, select.POLLIN)
        try:
            self.exit_fd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # no pidfd (older kernel, not Linux)
            self.exit_fd = None
        else:
            self.poller.register(self.exit_fd, select.POLLIN)

    def open(self, sink: _Sink) -> bool:
        return any(s is sink for s in self.sinks.values())

    def _pump(self, deadline: float, done) -> bool:
        """Read what comes until ``done()`` or ``deadline``; whether ``done()`` became true."""
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.exit_fd is None:
                left = min(left, self._TICK_S)
            for fd, _ in self.poller.poll(left * 1000):
                if fd != self.exit_fd:
                    self._read(fd)
        return True

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.sinks[fd].add(chunk)
        else:  # end of file: every writer has closed it
            self.poller.unregister(fd)
            del self.sinks[fd]

    def until_exit(self, timeout_s: float) -> bool:
        """Read the pipes until the target exits (True, reaped) or ``timeout_s`` passes (False)."""
        exited = self._pump(time.monotonic() + timeout_s, lambda: self.proc.poll() is not None)
        if exited:
            self.proc.wait()
        return exited

    def until_closed(self, grace_s: float) -> bool:
        """Once the target has exited: read the pipes until every writer has closed them, for
        up to ``grace_s``."""
        self._drop_exit()  # readable from now on: it would wake every poll
        return self._pump(time.monotonic() + grace_s, lambda: not self.sinks)

    def _drop_exit(self) -> None:
        if self.exit_fd is not None:
            self.poller.unregister(self.exit_fd)
            os.close(self.exit_fd)
            self.exit_fd = None

    def close(self) -> None:
        self._drop_exit()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def track(key: object, *, pgid: int | None = None, mark: str | None = None, under: Path | None = None) -> None:
    """Count long-lived processes (a web UI server's group, the browser) among those a signal handler
    kills: the group ``pgid`` leads and its session, the processes carrying ``mark``, those working under ``under``."""
    entry = procs.stat(pgid) if pgid else None
    with _LIVE_LOCK:
        _LIVE[key] = _Live(pgid, mark, Path(under) if under else None, entry.start_ticks if entry else 0)


def untrack(key: object) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(key, None)


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
    on_swept: Callable[[], None] | None = None,
    stdin: bytes | None = None,
    stdout_limit: int = MAX_STDOUT_BYTES,
    jail: Jail | None = None,
) -> TurnResult:
    """Run ``argv`` to completion or to ``timeout_s``; never raises for the target's own failures.

    ``mark`` goes into the environment (``OBAI_E2E_TURN``) of everything the turn starts;
    processes carrying it, or working under ``under``, are ended with the turn;
    ``on_swept`` is called when the last look for them found none left. ``stdin`` is
    written to the process's input (then closed), on a thread of its own, so a process
    that does not read it cannot stall the turn; stdout keeps its first ``stdout_limit``
    bytes. ``jail``: run it contained (drive.containment) when this machine allows it.
    Raises Interrupted when the runner is stopping, before the turn or after it was cut short.
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
        launched, contained = contained_argv(list(argv), jail, env, Path(cwd))
        proc = subprocess.Popen(
            launched,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
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
    if stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True, name=f"stdin-{pgid}").start()
    try:
        result, clean = _supervise(proc, live, argv, started, t0, timeout_s, kill_grace_s, stderr_tail_bytes,
                                   stdout_limit)
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(pgid, None)
    if STOPPING.is_set():
        raise Interrupted("the run was stopped during this turn; it will be driven again on resume")
    result.contained = contained
    if clean and on_swept is not None:
        on_swept()
    return result


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass  # the process ended (or closed its input) before reading it all
    finally:
        try:
            pipe.close()
        except (BrokenPipeError, OSError):
            pass


def _end_leftovers(live: _Live) -> procs.Sweep:
    # Everything the turn started descends from its leader, whose pid is the group's.
    return procs.sweep(mark=live.mark, groups=[live.pgid], sessions=[live.pgid], under=live.under,
                       since_ticks=live.since, from_pid=live.pgid)


def _supervise(proc, live: _Live, argv, started, t0, timeout_s, kill_grace_s,
               stderr_tail_bytes, stdout_limit) -> tuple[TurnResult, bool]:
    """The turn's result, and whether the last look for its processes found none left."""
    pgid = live.pgid
    out, err = _Sink(limit=stdout_limit), _Sink(tail=max(stderr_tail_bytes, 1))
    watch = _Watch(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err})
    timed_out = killed = False
    try:
        try:
            if not watch.until_exit(timeout_s):
                timed_out = killed = True
                _kill_group(pgid, signal.SIGTERM)
                watch.until_exit(kill_grace_s)
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
        swept = _end_leftovers(live)
        leftovers = len(swept.killed)
        if not watch.until_closed(PIPE_DRAIN_GRACE_S) or alive(pgid, group=True):
            _kill_group(pgid, signal.SIGKILL)
            swept = _end_leftovers(live)
            leftovers += len(swept.killed)
            killed = killed or watch.open(out)
            watch.until_closed(2)
    finally:
        watch.close()
    wall_ms = int((time.monotonic() - t0) * 1000)
    result = TurnResult(
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
    return result, swept.clean
