"""A turn's disk budget on its sandbox: how much the sandbox holds, looked at while the turn runs and at its end.

Enters: the sandbox folder and the budget in bytes (target.yaml ``sandbox.disk_budget_mb``). Leaves:
whether, and by how much, the sandbox went over it. Looking costs a walk of the folder, so it is
cheap by construction: the first look while a turn runs comes after ``FIRST_LOOK_S`` (an agent that
answers at once is never looked at while it runs), later looks at least ``MIN_GAP_S`` apart and
never more often than every ``COST_FACTOR`` times what the last look took; one more look follows
the turn's end. What a turn writes elsewhere is bounded file by file (RLIMIT_FSIZE, see
drive.mount_plan) and its private tmpfs mounts by their size.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

FIRST_LOOK_S = 1.0
MIN_GAP_S = 2.0
COST_FACTOR = 20
MB = 1024 * 1024
REASON = "disk_budget_exceeded"


def usage(folder: Path, stop_above: int | None = None) -> int:
    """Bytes of disk the files under ``folder`` take (a file with several names counted once); the walk
    stops as soon as the count passes ``stop_above``."""
    total, seen, todo = 0, set(), [str(folder)]
    while todo:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone meanwhile
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                        if (st.st_dev, st.st_ino) in seen:
                            continue
                        seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
                    if stop_above is not None and total > stop_above:
                        return total
        except OSError:
            continue  # not readable, or gone meanwhile
    return total


class DiskWatch:
    """The sandbox of one turn against its budget."""

    def __init__(self, folder: Path, budget: int, started: float | None = None):
        self.folder, self.budget = Path(folder), budget
        self.next_at = (time.monotonic() if started is None else started) + FIRST_LOOK_S
        self.over: str | None = None

    def look_if_due(self) -> bool:
        """Look when it is time to; whether the sandbox is over its budget."""
        if time.monotonic() < self.next_at:
            return False
        return self.look()

    def look(self) -> bool:
        """Look now; whether the sandbox is over its budget (``over`` then says by how much)."""
        t0 = time.monotonic()
        used = usage(self.folder, stop_above=self.budget)
        took = time.monotonic() - t0
        self.next_at = time.monotonic() + max(MIN_GAP_S, COST_FACTOR * took)
        if used > self.budget:
            self.over = f"its sandbox grew past its disk budget of {self.budget / MB:g} MB (sandbox.disk_budget_mb)"
        return self.over is not None
