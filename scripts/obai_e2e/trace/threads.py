"""Finding a turn's trace by its Opik thread: ``correlation.match: thread``.

Agents traced by Opik's integrations record the conversation they belong to as the
trace's ``thread_id``; the harness passes a fresh ``{session}`` for every unit, so the
thread names the unit. A unit with an async job asks twice in one session, so the turn's
own time window tells its two traces apart: a trace starts after its turn started (the
agent's clock is the harness's machine clock), and before the turn ended plus the slack.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Callable

from ..base.clock import iso, parse_iso
from ..config.sections import Correlation

CLOCK_GRAIN_S = 0.1
"""How far before the turn's start a trace may claim to start (timestamp rounding, not clock skew)."""


def thread_search(corr: Correlation, session: str, started_at: str,
                  ended_at: str) -> tuple[str, str, Callable[[dict], bool]]:
    """(method, filter string, exact check) for the trace of the turn of ``session`` between the two times."""
    lo = parse_iso(started_at) - timedelta(seconds=CLOCK_GRAIN_S)
    hi = parse_iso(ended_at) + timedelta(seconds=corr.window_slack_s)
    filter_string = (f'thread_id = "{session}" AND start_time >= "{iso(lo)}" AND start_time <= "{iso(hi)}"')

    def exact(trace: dict) -> bool:
        start = trace.get("start_time")
        return trace.get("thread_id") == session and bool(start) and lo <= parse_iso(start) <= hi
    return "thread", filter_string, exact
