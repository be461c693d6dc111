"""What a background drive leaves for its polls: who drives, how far, and one line per unit.

Three scratch files under ``<run>/.drive/`` (named ``*.tmp``, so never part of a run's
seal): ``state.json.tmp`` (the worker's pid, status and jobs), ``units.jsonl.tmp`` (one
:class:`UnitLine` per driven unit, appended as each unit's packet is stored) and
``shown.tmp`` (how many of those lines a poll has printed already). The packets are the
record; these files only report on them, and a lost one is rebuilt from the packets.

Every one of them is read back with the safe reader (a regular file of a bounded size: a
link or a FIFO planted in their place is no state), and none is ever written into a run
directory that is gone: the folder ``.drive/`` is made inside an existing run directory
only, so a run deleted under its worker is not brought back as a stray ``.drive/``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..base import procs
from ..base.clock import iso, utc_now
from ..base.errors import ConfigError
from ..base.fsutil import append_text, atomic_write_json, trim_torn_tail
from ..base.modeltext import inline, listing
from ..base.record import Record
from ..base.safe_read import UnsafeFile, read_bytes, read_tail, read_text

DRIVE_DIR = ".drive"
STATE_MAX_BYTES = 64_000
SHOWN_MAX_BYTES = 64
UNITS_MAX_BYTES = 256_000_000  # one line per unit, a few hundred bytes each
LOG_TAIL_BYTES = 16_000

RUNNING, DONE, FAILED, INTERRUPTED = "running", "done", "failed", "interrupted"

LINE_CHARS = 800   # a unit's line, at most
CODES_SHOWN = 5    # codes, and open questions, on a unit's line
CODE_CHARS = 60    # one code or question id


@dataclass
class UnitLine(Record):
    """A driven unit as the rules see it, before anyone judged it."""

    unit: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    seconds: float | None = None

    def text(self) -> str:
        """``S4 fail specialist.strategy.zero_trades | open: hub.incomplete_answer``: one line, its
        codes escaped and bounded (base/modeltext), at most ``LINE_CHARS`` characters."""
        out = f"{inline(self.unit, CODE_CHARS)} {inline(self.verdict, CODE_CHARS)}"  # harness values, bounded all the same
        if self.reasons:
            out += " " + listing(self.reasons, CODES_SHOWN, item_chars=CODE_CHARS)
        if self.open:
            out += " | open: " + listing(self.open, CODES_SHOWN, item_chars=CODE_CHARS)
        return inline(out, LINE_CHARS - 60)  # the cut note fits in the rest (it never cuts as built)


@dataclass
class DriveState(Record):
    """The background worker of a run's drive: who it is and where it stands."""

    pid: int
    status: str
    jobs: int
    started_at: str
    ended_at: str | None = None
    pending_at_start: int = 0
    error: str | None = None
    start_ticks: int | None = None   # when the worker started (/proc/<pid>/stat): tells it from a reused pid

    def worker_marker(self, run_dir: Path) -> bytes:
        """What the worker of ``run_dir`` has in its command line (see commands.drive)."""
        return b"\0drive\0--worker\0--run-dir\0" + str(Path(run_dir)).encode() + b"\0"


class DriveLog:
    """The drive's scratch files of one run directory."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.dir = self.run_dir / DRIVE_DIR
        self.state_path = self.dir / "state.json.tmp"
        self.units_path = self.dir / "units.jsonl.tmp"
        self.shown_path = self.dir / "shown.tmp"
        self.log_path = self.dir / "worker.log.tmp"

    # -- the worker's state ---------------------------------------------------------------

    def _make_dir(self) -> None:
        """``.drive/`` inside the run directory, which must exist (FileNotFoundError when it is gone)."""
        self.dir.mkdir(exist_ok=True)

    def state(self) -> DriveState | None:
        try:
            return DriveState.from_json(json.loads(read_bytes(self.state_path, limit=STATE_MAX_BYTES,
                                                              what="the drive state")))
        except (OSError, ValueError, ConfigError, UnsafeFile):
            return None

    def worker_alive(self, state: DriveState | None) -> bool:
        """Whether ``state`` names a worker that runs: its own process (same start time, a worker of
        this run by its command line), not a zombie, not another process given the same pid."""
        if state is None or state.status != RUNNING:
            return False
        return procs.is_ours(state.pid, state.start_ticks, state.worker_marker(self.run_dir))

    def start(self, jobs: int, pending: int) -> DriveState:
        self._make_dir()
        state = DriveState(pid=os.getpid(), status=RUNNING, jobs=jobs, started_at=iso(utc_now()),
                           pending_at_start=pending, start_ticks=procs.own_start_ticks() or None)
        atomic_write_json(self.state_path, state.to_json(), durable=False)
        return state

    def end(self, state: DriveState, status: str, error: str | None = None) -> None:
        state.status, state.error, state.ended_at = status, error, iso(utc_now())
        if not self.run_dir.is_dir():
            return  # the run directory was deleted: nothing to report to
        atomic_write_json(self.state_path, state.to_json(), durable=False)

    # -- the unit lines -------------------------------------------------------------------

    def lines(self) -> list[UnitLine]:
        """Every unit line so far (a torn last line, from a kill mid-append, is left out)."""
        try:
            text = read_text(self.units_path, limit=UNITS_MAX_BYTES, what="the drive's unit lines", errors="replace")
        except (OSError, UnsafeFile):
            return []
        out = []
        for raw in text.splitlines():
            try:
                out.append(UnitLine.from_json(json.loads(raw)))
            except (ValueError, ConfigError):
                continue
        return out

    def add(self, line: UnitLine) -> None:
        self._make_dir()
        if self.units_path.exists():
            trim_torn_tail(self.units_path)
        append_text(self.units_path, json.dumps(line.to_json(), ensure_ascii=False) + "\n", durable=False,
                    trimmed=True)

    # -- what a poll has printed ----------------------------------------------------------

    def shown(self) -> int:
        try:
            return int(read_text(self.shown_path, limit=SHOWN_MAX_BYTES, what="the drive's count").strip() or 0)
        except (OSError, ValueError, UnsafeFile):
            return 0

    def mark_shown(self, count: int) -> None:
        try:
            self._make_dir()
        except FileNotFoundError:
            return  # the run directory is gone: nothing to keep
        atomic_write_json(self.shown_path, count, durable=False)

    def log_tail(self, lines: int = 6) -> str:
        try:
            text = read_tail(self.log_path, LOG_TAIL_BYTES).decode("utf-8", errors="replace")
        except (OSError, UnsafeFile):
            return ""
        kept = [line for line in text.strip().splitlines() if line.strip() and not line.startswith("Bytecode")]
        return " | ".join(kept[-lines:])


def latest(lines: list[UnitLine]) -> list[UnitLine]:
    """Each unit's last line (a unit whose trace changed after its turn has a second one), in first-seen order."""
    return list({line.unit: line for line in lines}.values())


def tally(lines: list[UnitLine]) -> str:
    """``54 pass, 12 fail, 1 needs_review, 0 inconclusive by the rules; 60 with open questions``"""
    lines = latest(lines)
    counts = {v: 0 for v in ("pass", "fail", "needs_review", "inconclusive")}
    for line in lines:
        counts[line.verdict] = counts.get(line.verdict, 0) + 1
    with_open = sum(1 for line in lines if line.open)
    return (", ".join(f"{n} {v}" for v, n in counts.items()) + f" by the rules; {with_open} with open questions")
