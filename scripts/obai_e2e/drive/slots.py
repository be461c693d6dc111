"""How many turns of the target run at once: the ``--jobs`` slots a run's workers share.

A unit holds a slot while a turn of the target runs (its process, or its question on the
ui channel) and gives it back when the turn has ended. Reading the turn's trace, curating
it, tearing the sandbox down and waiting for an async job hold none, so with ``--jobs 1``
the next unit's turn starts while the last one's trace is read, and the target still never
sees two turns at once. A target whose sandbox has snapshot/restore hooks holds its slot
for the whole unit, hooks included: they may reset state that every turn shares.

Units take their first turn in the order they were handed out (the plan's order), so that
the target sees the same sequence of questions as when one unit ran after the other; an
async job's follow-up takes the next free slot.

When turns are told apart from their traces only by time window and query (correlation
``match: none``), two turns with the same query must not overlap: ``apart_s`` (the
window's slack) keeps them apart. A turn with a query already running, or that ended less
than ``apart_s`` ago, waits; the repeats of a stochastic case then run one after the other
while other units go on.
"""
from __future__ import annotations

import threading
import time

from ..base.errors import Interrupted
from ..base.procs import STOPPING

STOP_CHECK_S = 0.1  # how often a unit queued for a slot looks whether the run is stopping


class Slots:
    """``n`` turns at a time, shared by every worker of a run."""

    def __init__(self, n: int, apart_s: float | None = None):
        if n < 1:
            raise ValueError(f"slots: {n} is not a positive count")
        self.n = n
        self.apart_s = apart_s
        self._asking: dict[str, int] = {}     # query -> turns asking it now
        self._asked: dict[str, float] = {}    # query -> when its last turn ended (monotonic)
        self._lock = threading.Lock()
        self._free = n
        self._issued = 0     # tickets handed out, one per unit, in plan order
        self._next = 0       # the ticket whose first turn comes next
        self._passed: set[int] = set()  # tickets past their first turn (or that will never take one)
        # Who waits: a first turn under its ticket, follow-ups in arrival order. Only those
        # that can go are woken, not every worker of the run.
        self._first_waiting: dict[int, threading.Condition] = {}
        self._later_waiting: list[threading.Condition] = []

    def for_unit(self) -> "UnitSlot":
        with self._lock:
            ticket = self._issued
            self._issued += 1
        return UnitSlot(self, ticket)

    def _can_go(self, ticket: int | None, key: str | None = None) -> bool:
        return self._free > 0 and (ticket is None or ticket == self._next) and self._apart(key)

    def _apart(self, key: str | None) -> bool:
        """No turn asks ``key`` now, and the last one ended at least ``apart_s`` ago."""
        if key is None or self.apart_s is None:
            return True
        if self._asking.get(key):
            return False
        ended = self._asked.get(key)
        return ended is None or time.monotonic() - ended >= self.apart_s

    def _take(self, ticket: int | None, key: str | None = None) -> None:
        """Wait for a free slot (and, for a first turn, for this ticket's turn in the order)."""
        with self._lock:
            if not self._can_go(ticket, key):
                cond = threading.Condition(self._lock)
                if ticket is None:
                    self._later_waiting.append(cond)
                else:
                    self._first_waiting[ticket] = cond
                try:
                    while not self._can_go(ticket, key):
                        if STOPPING.is_set():
                            raise Interrupted("the run is stopping; this unit's turn was not started")
                        cond.wait(STOP_CHECK_S)
                finally:
                    if ticket is None:
                        self._later_waiting.remove(cond)
                    else:
                        del self._first_waiting[ticket]
            self._free -= 1
            if key is not None:
                self._asking[key] = self._asking.get(key, 0) + 1
            if ticket is not None:
                self._pass(ticket)

    def _give_back(self, key: str | None = None) -> None:
        with self._lock:
            self._free += 1
            if key is not None:
                self._asking[key] -= 1
                self._asked[key] = time.monotonic()
            self._wake()

    def _wake(self) -> None:
        """Wake the waiters that may take a free slot now (caller holds the lock); one that
        finds the slot taken by another waits again."""
        if self._free <= 0:
            return
        first = self._first_waiting.get(self._next)
        if first is not None:
            first.notify()
        for cond in self._later_waiting[:self._free]:
            cond.notify()

    def _pass(self, ticket: int) -> None:
        """Mark ``ticket`` past its first turn; the order moves on (caller holds the lock)."""
        self._passed.add(ticket)
        while self._next in self._passed:
            self._passed.discard(self._next)
            self._next += 1
        self._wake()

    def _abandon(self, ticket: int) -> None:
        with self._lock:
            if ticket >= self._next and ticket not in self._passed:
                self._pass(ticket)


class UnitSlot:
    """One unit's use of the slots (a context manager, re-entrant within the unit).

    ``queued_s`` is how long the unit waited for a slot, which is no part of its own time.
    ``close()`` gives up the unit's place in the order if it never took a turn. Without
    slots (one unit driven on its own) it holds nothing.
    """

    def __init__(self, slots: Slots | None = None, ticket: int = 0):
        self._slots = slots
        self._ticket = ticket
        self._first = True
        self._depth = 0
        self.queued_s = 0.0
        self._key: str | None = None
        self._held: str | None = None

    def asking(self, query: str) -> "UnitSlot":
        """The next turn asks ``query``: the slots keep it apart from others asking the same (window mode)."""
        self._key = query
        return self

    def __enter__(self) -> "UnitSlot":
        if self._depth == 0 and self._slots is not None:
            t0 = time.monotonic()
            self._held = self._key if self._slots.apart_s is not None else None
            self._slots._take(self._ticket if self._first else None, self._held)
            self._first = False
            self.queued_s += time.monotonic() - t0
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0 and self._slots is not None:
            self._slots._give_back(self._held)

    def close(self) -> None:
        if self._first and self._slots is not None:
            self._first = False
            self._slots._abandon(self._ticket)
