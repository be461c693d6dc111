"""The results entries of units judged in this process, kept aside until the run is finished.

A headless run has each unit's packet and mechanical check in hand when it records the
verdict; building the unit's results.json entry then, instead of reading and checking the
packet again when the run finishes, takes that work off the run's last, single-threaded
step. The entries go to a scratch file in the run directory (one JSON line each; only
their place is held in memory, so a run of any size keeps memory flat). It is a cache:
never synced, read only by the process that wrote it, and removed when the run finishes.
An entry it cannot give back (a killed run's file, a torn line) is built from the files
as before.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

SPOOL = ".entries.spool.tmp"  # *.tmp: never part of a run's seal


class EntrySpool:
    """Results entries by unit id, written as the units are judged (one writer thread)."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / SPOOL
        self._file = None
        self._at: dict[str, tuple[int, int]] = {}

    def add(self, unit_id: str, entry: dict) -> None:
        line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        if self._file is None:
            self._file = open(self.path, "w+b")  # a previous process's file is of no use here
        offset = self._file.seek(0, os.SEEK_END)
        self._file.write(line)
        self._at[unit_id] = (offset, len(line))

    def get(self, unit_id: str) -> dict | None:
        """The entry stored for ``unit_id``, or None when there is none (or it cannot be read)."""
        where = self._at.get(unit_id)
        if where is None or self._file is None:
            return None
        try:
            self._file.flush()
            self._file.seek(where[0])
            entry = json.loads(self._file.read(where[1]))
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) and entry.get("unit_id") == unit_id else None

    def close(self) -> None:
        """Remove the file (also one a killed process left behind)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._at.clear()
        discard(self.path.parent)


def discard(run_dir: Path) -> None:
    try:
        os.unlink(Path(run_dir) / SPOOL)
    except FileNotFoundError:
        pass
