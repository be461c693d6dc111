"""SIGINT and SIGTERM: one handler for the whole process, installed before any slow import.

The command line installs it first thing (``cli.main``), so a signal at any moment of a
command — while it imports, reads its configuration, drives a turn or writes its reports
— ends it the same way: the stop hooks run (a stage registers its own: the driving stage
kills the turns in flight and tears the sandboxes down), then :class:`Stopped` is raised
in the main thread, which the command turns into exit 130 with what to do next. A second
signal while the first is being handled is noted and ignored, so the teardown completes.

A stop is bounded: the first signal also starts a watchdog thread. Should the process still be
running once the stop's allowance is over (:data:`STOP_WITHIN_S` plus what each hook says it
may take: turns' grace periods, restore hooks), the watchdog writes every thread's stack to
stderr, runs the force hooks (the turns in flight are killed outright) and ends the process
with exit 130. Everything a run records is written whole or not at all, so the run resumes.

Once the command has returned, a signal is only noted when the process is ending, and
handed to the handler that was there before otherwise (a test calling the command line in
its own process keeps its Ctrl-C).

Only built-in modules are imported here (``_signal``, not ``signal`` and its enum), so the
handler is in place a few milliseconds into the process.
"""
from __future__ import annotations

import os
from collections.abc import Callable

import _signal

NAMES = {_signal.SIGINT: "SIGINT", _signal.SIGTERM: "SIGTERM"}
SIGNALS = tuple(NAMES)


class Stopped(KeyboardInterrupt):
    """The process was told to stop (SIGINT or SIGTERM)."""

    def __init__(self, signum: int):
        super().__init__(NAMES.get(signum, str(signum)))
        self.signum = signum


STOP_WITHIN_S = 30.0  # what a stop may take beyond the allowances its hooks name

_received: list[int] = []
_hooks: list[Callable[[], None]] = []
_allowances: list[Callable[[], float]] = []
_forces: list[Callable[[], None]] = []
_watchdog: list = []  # the event that disarms the running stop's watchdog
_previous: dict[int, object] = {}
_state = {"active": False, "quiet": False}


def _handle(signum: int, frame) -> None:
    _received.append(signum)
    if _state["active"]:
        if len(_received) > 1:
            return  # already stopping: the first signal's teardown goes on
        _watch(signum)
        for hook in list(_hooks):
            try:
                hook()
            except Exception:  # noqa: BLE001 - one failed hook must not keep the others from running
                pass
        raise Stopped(signum)
    import threading

    if _state["quiet"] or not threading.main_thread().is_alive():
        return  # the process is ending: nothing left to stop
    _received.remove(signum)
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous != _signal.SIG_IGN:
        _signal.signal(signum, _signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install() -> None:
    """Handle SIGINT and SIGTERM from now on (the main thread only; elsewhere a no-op)."""
    for signum in SIGNALS:
        current = _signal.getsignal(signum)
        if current is not _handle:
            try:
                _signal.signal(signum, _handle)
            except ValueError:  # not the main thread: only the main thread handles signals
                return
            _previous[signum] = current
    if not _state["active"]:
        _received.clear()
        _state.update(active=True, quiet=False)


def release(*, quiet: bool) -> None:
    """The command has returned: later signals are only noted (``quiet``: the process ends now) or passed on.

    A process that goes on (not ``quiet``: a test calling the command line) disarms the stop's watchdog;
    one that ends keeps it, so that an exit that hangs is ended too."""
    _state.update(active=False, quiet=quiet)
    if not quiet:
        for disarmed in _watchdog:
            disarmed.set()
        _watchdog.clear()


def on_stop(hook: Callable[[], None], *, allowance: Callable[[], float] | None = None,
            force: Callable[[], None] | None = None) -> None:
    """Run ``hook`` (once per process, whatever calls this) when the first signal arrives.

    ``allowance``: the seconds the stop may take for it (asked when the signal arrives, on the
    main thread, with no lock the main thread could be holding); ``force``: what ends its part
    at once when the stop overruns (run on the watchdog's thread)."""
    for items, item in ((_hooks, hook), (_allowances, allowance), (_forces, force)):
        if item is not None and item not in items:
            items.append(item)


def _watch(signum: int) -> None:
    """Start the watchdog that ends the process should the stop that ``signum`` began overrun."""
    import threading
    import time

    allowed = STOP_WITHIN_S
    for allowance in list(_allowances):
        try:
            allowed += max(0.0, float(allowance()))
        except Exception:  # noqa: BLE001 - an allowance that cannot be told adds nothing
            pass

    disarmed = threading.Event()
    _watchdog[:] = [disarmed]

    def watch() -> None:
        if not disarmed.wait(allowed):
            _overrun(signum, allowed)

    threading.Thread(target=watch, name="stop-watchdog", daemon=True).start()


def _overrun(signum: int, allowed: float) -> None:
    """The stop took longer than ``allowed``: the stacks to stderr, the force hooks, exit 130."""
    import faulthandler

    try:
        os.write(2, (f"obai-e2e: the stop after {NAMES.get(signum, signum)} did not finish within {allowed:.0f} s; "
                     "the stacks of its threads follow; the turns in flight are killed and the process ends "
                     "(the run resumes where it stopped)\n").encode())
        faulthandler.dump_traceback(file=2, all_threads=True)
    except (OSError, ValueError):
        pass
    for force in list(_forces):
        try:
            force()
        except Exception:  # noqa: BLE001 - the process ends either way
            pass
    os._exit(130)


def received() -> int | None:
    """The first signal received since :func:`install`, or None."""
    return _received[0] if _received else None
