"""A turn that failed before it could answer: an unexpected exit code, or a usage error on stderr.

Enters: a finished ``TurnResult`` and the exit code the case expects. Leaves: whether the
turn failed (its trace is then looked for once, not until the deadline) and the sentence a
report shows for it: the exit code and the last lines of stderr.
"""
from __future__ import annotations

import re

from .turn import TurnResult

# How argparse, click, typer, getopt and most CLI parsers report a bad command line.
USAGE_ERROR = re.compile(
    r"^\s*usage:|invalid choice|unrecognized arguments?|the following arguments are required"
    r"|no such (sub)?command|no such option|unknown (sub)?command|unknown option|invalid option",
    re.IGNORECASE | re.MULTILINE)
STDERR_LINES = 3
LINE_CHARS = 240


def usage_error(stderr: str) -> bool:
    return bool(USAGE_ERROR.search(stderr or ""))


def last_lines(stderr: str, n: int = STDERR_LINES) -> list[str]:
    """The last ``n`` non-blank lines of stderr, each cut to ``LINE_CHARS``."""
    lines = [line.rstrip() for line in (stderr or "").splitlines() if line.strip()]
    return [line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …" for line in lines[-n:]]


def failed(turn: TurnResult, ok_exit: int = 0) -> bool:
    """True when the turn ended on its own with another exit code than ``ok_exit``, or printed a usage error."""
    if turn.timed_out or turn.exit_code is None:
        return False
    return turn.exit_code != ok_exit or usage_error(turn.stderr_tail)


def describe(turn: TurnResult) -> str:
    """``the target exited 2 (a usage error) without a trace; stderr: …`` for the reports."""
    what = " (a usage error)" if usage_error(turn.stderr_tail) else ""
    tail = " | ".join(last_lines(turn.stderr_tail))
    return f"the target exited {turn.exit_code}{what} without a trace" + (f"; stderr: {tail}" if tail else
                                                                          "; stderr was empty")
