"""A turn that failed before it could answer: an unexpected exit code, a usage error on stderr, or a turn
that went over its disk budget.

Enters: a finished ``TurnResult`` and the exit code the case expects. Leaves: whether the
turn failed (its trace is then looked for once, not until the deadline) and the sentence a
report shows for it: the exit code and the last lines of stderr; and whether it went over its
disk budget (``disk_budget_exceeded``: ended by the harness for its sandbox's size, killed by
SIGXFSZ for a file past the budget, or failed on such a file) and the sentence for that.
"""
from __future__ import annotations

import re
import signal

from .turn import TurnResult

# How argparse, click, typer, getopt and most CLI parsers report a bad command line.
USAGE_ERROR = re.compile(
    r"^\s*usage:|invalid choice|unrecognized arguments?|the following arguments are required"
    r"|no such (sub)?command|no such option|unknown (sub)?command|unknown option|invalid option",
    re.IGNORECASE | re.MULTILINE)
STDERR_LINES = 3
LINE_CHARS = 240
DISK_BUDGET_EXCEEDED = "disk_budget_exceeded"
# What a target that ignores SIGXFSZ (Python does) or a shell whose child it killed prints for a file past
# the limit.
FILE_TOO_LARGE = re.compile(r"\[Errno 27\] File too large|File size limit exceeded")


def usage_error(stderr: str) -> bool:
    return bool(USAGE_ERROR.search(stderr or ""))


def last_lines(stderr: str, n: int = STDERR_LINES) -> list[str]:
    """The last ``n`` non-blank lines of stderr, each cut to ``LINE_CHARS``."""
    lines = [line.rstrip() for line in (stderr or "").splitlines() if line.strip()]
    return [line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …" for line in lines[-n:]]


def failed(turn: TurnResult, ok_exit: int = 0) -> bool:
    """True when the turn ended on its own with another exit code than ``ok_exit``, or printed a usage error,
    or was ended for its disk budget."""
    if turn.disk_budget_exceeded:
        return True
    if turn.timed_out or turn.exit_code is None:
        return False
    return turn.exit_code != ok_exit or usage_error(turn.stderr_tail)


def describe(turn: TurnResult) -> str:
    """``the target exited 2 (a usage error) without a trace; stderr: …`` for the reports."""
    what = " (a usage error)" if usage_error(turn.stderr_tail) else ""
    tail = " | ".join(last_lines(turn.stderr_tail))
    return f"the target exited {turn.exit_code}{what} without a trace" + (f"; stderr: {tail}" if tail else
                                                                          "; stderr was empty")


def over_budget(turn: TurnResult) -> str | None:
    """Why the turn went over its disk budget (the sentence a report shows), or None when it did not."""
    if turn.disk_budget_exceeded:
        return f"the turn was ended: {turn.disk_budget_exceeded}"
    if turn.timed_out or turn.exit_code in (None, 0):
        return None
    if turn.exit_code == -signal.SIGXFSZ:
        return ("the target was killed by SIGXFSZ: a file it wrote reached the turn's disk budget "
                "(sandbox.disk_budget_mb)")
    found = FILE_TOO_LARGE.search(turn.stderr_tail or "")
    if found:
        return (f"the target exited {turn.exit_code} after a file it wrote reached the turn's disk budget "
                f"(sandbox.disk_budget_mb; stderr: {found.group(0)})")
    return None
