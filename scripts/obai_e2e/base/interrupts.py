"""SIGINT and SIGTERM: one handler for the whole process, installed before any slow import.

The command line installs it first thing (``cli.main``), so a signal at any moment of a
command — while it imports, reads its configuration, drives a turn or writes its reports
— ends it the same way: the stop hooks run (a stage registers its own: the driving stage
kills the turns in flight and tears the sandboxes down), then :class:`Stopped` is raised
in the main thread, which the command turns into exit 130 with what to do next. A second
signal while the first is being handled is noted and ignored, so the teardown completes.

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


_received: list[int] = []
_hooks: list[Callable[[], None]] = []
_previous: dict[int, object] = {}
_state = {"active": False, "quiet": False}


def _handle(signum: int, frame) -> None:
    _received.append(signum)
    if _state["active"]:
        if len(_received) > 1:
            return  # already stopping: the first signal's teardown goes on
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
    """The command has returned: later signals are only noted (``quiet``: the process ends now) or passed on."""
    _state.update(active=False, quiet=quiet)


def on_stop(hook: Callable[[], None]) -> None:
    """Run ``hook`` (once per process, whatever calls this) when the first signal arrives."""
    if hook not in _hooks:
        _hooks.append(hook)


def received() -> int | None:
    """The first signal received since :func:`install`, or None."""
    return _received[0] if _received else None
