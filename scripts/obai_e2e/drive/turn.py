"""Driving one turn of the target: a real subprocess with a real timeout.

The target runs in its own process group and session with a mark in its environment, contained
where the machine allows it (drive.containment). A timeout sends SIGTERM to the target and its
group, and SIGKILL after a grace period; so does a sandbox that grows over the turn's disk budget
(drive.disk_budget). When the target has ended, every process it left behind is ended: contained,
its namespace goes as a whole; otherwise whatever is in its group or session, carries its mark, or
works in its sandbox (a ``setsid`` daemon too) is killed, so nothing outlives the turn. Output is
read as it comes, in the supervising thread, so that a child that keeps our pipes open cannot
stall the harness. When the runner is stopping, a turn neither starts nor returns a result.
"""
from __future__ import annotations

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
from .containment import Jail, Launched, start
from .disk_budget import DiskWatch
from .live import Live, track, untrack
from .turn_watch import EXITED, TIMED_OUT, Sink, Watch

MAX_STDOUT_BYTES = 1_000_000
PIPE_DRAIN_GRACE_S = 1.0


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
    containment: str = ""                               # how: bwrap, jail or none (empty: not recorded)
    disk_budget_exceeded: str | None = None             # why the turn went over its disk budget
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
    bytes. ``jail``: run it contained (drive.containment) when this machine allows it, and
    hold ``under`` (its sandbox) to the jail's disk budget (drive.disk_budget).
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
        launched = start(list(argv), jail, env=env, cwd=Path(cwd),
                         stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise NotReady(f"target command not found: {argv[0]!r} (not on PATH, or the path does not exist)") from None
    except PermissionError:
        raise NotReady(f"target command is not executable: {argv[0]!r}") from None
    proc = launched.proc
    live = track(launched, pgid=proc.pid, mark=mark, under=under, launched=launched, grace_s=kill_grace_s)
    if stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True, name=f"stdin-{proc.pid}").start()
    disk = DiskWatch(live.under, jail.budget, t0) if jail is not None and jail.budget and live.under else None
    try:
        result, clean = _supervise(launched, live, timeout_s, kill_grace_s, disk,
                                   Sink(limit=stdout_limit), Sink(tail=max(stderr_tail_bytes, 1)))
    finally:
        untrack(launched)
        launched.close()
    if STOPPING.is_set():
        raise Interrupted("the run was stopped during this turn; it will be driven again on resume")
    result.argv, result.started_at, result.wall_ms = list(argv), iso(started), int((time.monotonic() - t0) * 1000)
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


def _end_leftovers(live: Live) -> procs.Sweep:
    # Everything the turn started descends from its leader, whose pid is the group's.
    return procs.sweep(mark=live.mark, groups=[live.pgid], sessions=[live.pgid], under=live.under,
                       since_ticks=live.since, from_pid=live.pgid)


def _supervise(launched: Launched, live: Live, timeout_s: float, kill_grace_s: float, disk: DiskWatch | None,
               out: Sink, err: Sink) -> tuple[TurnResult, bool]:
    """The turn's result (its argv, start and wall time left to the caller), and whether the last look
    for its processes found none left."""
    proc = launched.proc
    watch = Watch(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err})
    try:
        ended = _until_ended(launched, watch, timeout_s, kill_grace_s, disk)
        launched.settle()  # contained: its namespace, and every process of it, is gone
        # The target has ended: whatever it left running (a child still holding our pipes, a
        # daemon in a session of its own) is ended with it.
        swept = _end_leftovers(live)
        leftovers, killed = len(swept.killed), ended != EXITED
        if not watch.until_closed(PIPE_DRAIN_GRACE_S) or alive(live.pgid, group=True):
            launched.kill()
            swept = _end_leftovers(live)
            leftovers += len(swept.killed)
            killed = killed or watch.open(out)
            watch.until_closed(2)
    finally:
        watch.close()
    if ended == EXITED and disk is not None:
        disk.look()  # what it wrote up to its last instant
    result = TurnResult(
        exit_code=launched.exit_code() if ended == EXITED else None,
        stdout=out.text(),
        stderr_tail=err.text(),
        ended_at=iso(utc_now()),
        timed_out=ended == TIMED_OUT,
        killed=killed,
        stdout_truncated=out.truncated,
        stdout_bytes=out.total,
        leftovers_killed=leftovers,
        contained=launched.contained,
        containment=launched.mechanism,
        disk_budget_exceeded=disk.over if disk is not None else None,
    )
    return result, swept.clean


def _until_ended(launched: Launched, watch: Watch, timeout_s: float, kill_grace_s: float,
                 disk: DiskWatch | None) -> str:
    """Wait for the target to end; past its timeout or over its disk budget it gets SIGTERM, then SIGKILL
    after ``kill_grace_s``. EXITED (it ended on its own), TIMED_OUT or OVER_BUDGET."""
    ended = TIMED_OUT
    try:
        ended = watch.until_exit(timeout_s, disk)
        if ended != EXITED:
            launched.term()
            watch.until_exit(kill_grace_s)
    finally:
        if launched.proc.poll() is None or ended != EXITED:
            # interrupted by a signal of ours, or cut short: children that ignored SIGTERM (or the
            # target itself) are killed now
            launched.kill()
            launched.proc.wait()
    return ended
