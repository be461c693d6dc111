"""The target's processes in flight (turns, a web UI server, the browser), ended together when a run stops.

Enters: each turn or long-lived process as it starts (:func:`track`) and ends (:func:`untrack`).
Leaves: :func:`end_all_live`, which a stop (SIGINT, SIGTERM: ``drive.sandbox.teardown_all``) calls:
it sends SIGTERM to every contained process it knows how to end gracefully (a turn, the web UI
server), gives them the longest of their grace periods, then kills everything that is left (its
group and session, what carries its mark, what works in its sandbox) and returns only once every
namespace of them is gone.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..base import procs
from .launch import SETTLE_S, Launched

POLL_S = 0.02


@dataclass(frozen=True)
class Live:
    """One process in flight and how to find what it started."""

    pgid: int | None
    mark: str | None
    under: Path | None
    since: int                          # no process of it started before this (clock ticks)
    launched: Launched | None = None    # ended gracefully: SIGTERM first (a turn, the web UI server)
    grace_s: float = 0.0


_LIVE: dict[object, Live] = {}
_LOCK = threading.RLock()  # the signal handler takes it on the main thread, which may hold it


def track(key: object, *, pgid: int | None = None, mark: str | None = None, under: Path | None = None,
          launched: Launched | None = None, grace_s: float = 0.0) -> Live:
    """Count a process among those a stop ends: the group ``pgid`` leads and its session, the processes
    carrying ``mark``, those working under ``under``; ``launched`` is given SIGTERM and ``grace_s`` first."""
    entry = procs.stat(pgid) if pgid else None
    live = Live(pgid, mark, Path(under) if under else None, entry.start_ticks if entry else 0, launched, grace_s)
    with _LOCK:
        _LIVE[key] = live
    return live


def untrack(key: object) -> None:
    with _LOCK:
        _LIVE.pop(key, None)


def end_all_live() -> None:
    """SIGTERM, the grace, then SIGKILL to every process in flight; returns once their namespaces are gone."""
    with _LOCK:
        live = list(_LIVE.values())
    graceful = [t for t in live if t.launched is not None]
    for t in graceful:
        t.launched.term()
    deadline = time.monotonic() + max((t.grace_s for t in graceful), default=0.0)
    while time.monotonic() < deadline and any(_running(t) for t in graceful):
        time.sleep(POLL_S)
    for t in live:
        if t.launched is not None:
            t.launched.kill()
        groups = [t.pgid] if t.pgid else []
        procs.end_all(mark=t.mark, groups=groups, sessions=groups, under=t.under, since_ticks=t.since)
    for t in graceful:
        t.launched.settle()


def stop_allowance() -> float:
    """The seconds :func:`end_all_live` may take now: the longest grace of the processes in flight, and the
    time to make sure their namespaces are gone. Read without the lock (a signal handler asks it)."""
    live = list(_LIVE.values())
    if not live:
        return 0.0
    return max((t.grace_s for t in live), default=0.0) + 2 * SETTLE_S


def kill_all_now() -> None:
    """SIGKILL to every process in flight and its namespace at once, taking no lock (a stop that overran)."""
    for t in list(_LIVE.values()):
        if t.launched is not None:
            t.launched.kill_now()
        if t.pgid:
            procs.end_all(mark=t.mark, groups=[t.pgid], sessions=[t.pgid], under=t.under, since_ticks=t.since)


def _running(t: Live) -> bool:
    """Whether the process a turn started is still running (a zombie has ended: its thread reaps it)."""
    entry = procs.stat(t.launched.proc.pid)
    return entry is not None and entry.state not in ("Z", "X")
