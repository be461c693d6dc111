"""A turn's two pipes and its exit, watched by one ``poll`` in the thread that supervises it.

Enters: the started process and a sink per pipe. Leaves: what each pipe gave (its first bytes, or
its last), and when the process exited, timed out, or (with a disk watch, drive.disk_budget) went
over its disk budget.
"""
from __future__ import annotations

import os
import select
import subprocess
import time

from .disk_budget import DiskWatch

EXITED, TIMED_OUT, OVER_BUDGET = "exited", "timed_out", "over_budget"


class Sink:
    """What one pipe gave: its first ``limit`` bytes, or (``tail``) its last ``tail`` bytes."""

    def __init__(self, *, limit: int | None = None, tail: int | None = None):
        self.limit, self.tail = limit, tail
        self.data = bytearray()
        self.total = 0
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.tail is not None:
            self.data += chunk
            if len(self.data) > self.tail:
                del self.data[: len(self.data) - self.tail]
                self.truncated = True
            return
        room = (self.limit or 0) - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Watch:
    """The turn's two pipes and its exit, watched by one ``poll`` in the supervising thread.

    The exit is seen through a pidfd where the kernel offers one; elsewhere ``proc.poll()``
    is asked at least every ``_TICK_S``. A pipe is read whenever it has data, so a target
    that writes more than a pipe holds never blocks, and one still holding a pipe after
    its exit (a child that inherited it) cannot stall the harness: the pipes are given up
    when their grace is over.
    """

    _TICK_S = 0.05

    def __init__(self, proc: subprocess.Popen, sinks: dict[int, Sink]):
        self.proc = proc
        self.sinks = sinks
        self.poller = select.poll()
        for fd in sinks:
            os.set_blocking(fd, False)
            self.poller.register(fd, select.POLLIN)
        try:
            self.exit_fd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # no pidfd (older kernel, not Linux)
            self.exit_fd = None
        else:
            self.poller.register(self.exit_fd, select.POLLIN)

    def open(self, sink: Sink) -> bool:
        return any(s is sink for s in self.sinks.values())

    def _pump(self, deadline: float, done) -> bool:
        """Read what comes until ``done()`` or ``deadline``; whether ``done()`` became true."""
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.exit_fd is None:
                left = min(left, self._TICK_S)
            for fd, _ in self.poller.poll(left * 1000):
                if fd != self.exit_fd:
                    self._read(fd)
        return True

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.sinks[fd].add(chunk)
        else:  # end of file: every writer has closed it
            self.poller.unregister(fd)
            del self.sinks[fd]

    def until_exit(self, timeout_s: float, disk: DiskWatch | None = None) -> str:
        """Read the pipes until the target exits (EXITED, reaped), ``timeout_s`` passes (TIMED_OUT) or
        ``disk`` finds its sandbox over the budget (OVER_BUDGET)."""
        deadline = time.monotonic() + timeout_s
        while True:
            until = deadline if disk is None else min(deadline, disk.next_at)
            if self._pump(until, lambda: self.proc.poll() is not None):
                self.proc.wait()
                return EXITED
            if time.monotonic() >= deadline:
                return TIMED_OUT
            if disk is not None and disk.look_if_due():
                return OVER_BUDGET

    def until_closed(self, grace_s: float) -> bool:
        """Once the target has exited: read the pipes until every writer has closed them, for
        up to ``grace_s``."""
        self._drop_exit()  # readable from now on: it would wake every poll
        return self._pump(time.monotonic() + grace_s, lambda: not self.sinks)

    def _drop_exit(self) -> None:
        if self.exit_fd is not None:
            self.poller.unregister(self.exit_fd)
            os.close(self.exit_fd)
            self.exit_fd = None

    def close(self) -> None:
        self._drop_exit()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
