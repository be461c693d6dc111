"""Driving one turn of the target: a real subprocess with a real timeout.

The target runs in its own process group, so a timeout kills everything it started,
including children that ignore SIGTERM (SIGTERM first, SIGKILL after a grace period).
Output is read on threads so that a child that keeps our pipes open after the target
exits cannot stall the harness.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..base.clock import iso, utc_now
from ..base.errors import NotReady
from ..base.procs import alive
from ..base.record import Record

MAX_STDOUT_BYTES = 1_000_000
PIPE_DRAIN_GRACE_S = 1.0

# Process groups of turns in flight, so a signal handler can kill them all.
_LIVE_GROUPS: set[int] = set()
_LIVE_LOCK = threading.Lock()


def kill_live_groups() -> None:
    """Kill every target process group that is still running (used on SIGTERM/SIGINT)."""
    with _LIVE_LOCK:
        groups = list(_LIVE_GROUPS)
    for pgid in groups:
        _kill_group(pgid, signal.SIGKILL)


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
    correlation_tag: str | None = None


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
        self.truncated = False

    def run(self) -> None:
        try:
            for chunk in iter(lambda: self.stream.read1(65536), b""):
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
) -> TurnResult:
    """Run ``argv`` to completion or to ``timeout_s``; never raises for the target's own failures."""
    started = utc_now()
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise NotReady(f"target command not found: {argv[0]!r} (check target.command in the target configuration and PATH)") from None
    except PermissionError:
        raise NotReady(f"target command is not executable: {argv[0]!r}") from None
    pgid = proc.pid
    with _LIVE_LOCK:
        _LIVE_GROUPS.add(pgid)
    try:
        return _supervise(proc, pgid, argv, started, t0, timeout_s, kill_grace_s, stderr_tail_bytes)
    finally:
        with _LIVE_LOCK:
            _LIVE_GROUPS.discard(pgid)


def _supervise(proc, pgid, argv, started, t0, timeout_s, kill_grace_s, stderr_tail_bytes) -> TurnResult:
    out = _Reader(proc.stdout, MAX_STDOUT_BYTES, None)
    err = _Reader(proc.stderr, None, max(stderr_tail_bytes, 1))
    out.start()
    err.start()
    timed_out = killed = False
    try:
        proc.wait(timeout=timeout_s)
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
    # A child left behind may hold the pipes open; give it a moment, then kill the group.
    out.join(PIPE_DRAIN_GRACE_S)
    err.join(0.1)
    if out.is_alive() or err.is_alive() or alive(pgid, group=True):
        _kill_group(pgid, signal.SIGKILL)
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
    )
