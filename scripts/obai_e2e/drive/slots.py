"""How many turns of the target run at once: the ``--jobs`` slots a run's workers share.

A unit holds a slot while a turn of the target runs (its process, or its question on the
ui channel) and gives it back when the turn has ended. Reading the turn's trace, curating
it, tearing the sandbox down and waiting for an async job hold none, so with ``--jobs 1``
the next unit's turn starts while the last one's trace is read, and the target still never
sees two turns at once. A target whose sandbox has snapshot/restore hooks holds its slot
for the whole unit, hooks included: they may reset state that every turn shares.
"""
from __future__ import annotations

import threading
import time

from ..base.errors import Interrupted
from ..base.procs import STOPPING

STOP_CHECK_S = 0.1  # how often a unit queued for a slot looks whether the run is stopping


class Slots:
    """``n`` turns at a time, shared by every worker of a run."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"slots: {n} is not a positive count")
        self.n = n
        self._free = threading.BoundedSemaphore(n)

    def for_unit(self) -> "UnitSlot":
        return UnitSlot(self._free)


class UnitSlot:
    """One unit's use of the slots (a context manager, re-entrant within the unit).

    ``queued_s`` is how long the unit waited for a slot, which is no part of its own time.
    Without slots (one unit driven on its own) it holds nothing.
    """

    def __init__(self, free: threading.BoundedSemaphore | None = None):
        self._free = free
        self._depth = 0
        self.queued_s = 0.0

    def __enter__(self) -> "UnitSlot":
        if self._depth == 0 and self._free is not None:
            t0 = time.monotonic()
            while not self._free.acquire(timeout=STOP_CHECK_S):
                if STOPPING.is_set():
                    raise Interrupted("the run is stopping; this unit's turn was not started")
            self.queued_s += time.monotonic() - t0
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0 and self._free is not None:
            self._free.release()
