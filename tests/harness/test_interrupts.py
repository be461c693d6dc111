"""The process's SIGINT/SIGTERM handler: the first signal runs the stop hooks and stops the command, a second
one while stopping is only noted, and once the command has returned a signal goes where it went before."""
from __future__ import annotations

import os
import signal
import time

import pytest
from obai_e2e.base import interrupts


def deliver(signum: int) -> None:
    os.kill(os.getpid(), signum)
    for _ in range(100):  # the handler runs between two bytecodes of the main thread: at once
        time.sleep(0)


@pytest.fixture
def handler(monkeypatch):
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    # What was there before the command, whatever an earlier test in this worker left installed
    # (the module's handler itself, after a command ran in the test process).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for name, value in (("_hooks", []), ("_received", []), ("_previous", {}),
                        ("_state", {"active": False, "quiet": False})):
        monkeypatch.setattr(interrupts, name, value)
    try:
        yield interrupts
    finally:
        for signum, previous in saved.items():
            signal.signal(signum, previous)


def test_the_first_signal_stops_a_second_is_noted_and_afterwards_it_is_passed_on(handler):
    ran = []
    handler.install()
    handler.on_stop(lambda: ran.append("teardown"))
    handler.on_stop(lambda: 1 / 0)  # a failing hook does not keep the others from running
    with pytest.raises(handler.Stopped) as stopped:
        deliver(signal.SIGTERM)
    assert stopped.value.signum == signal.SIGTERM and str(stopped.value) == "SIGTERM" and ran == ["teardown"]
    deliver(signal.SIGINT)  # while the first one's teardown runs: nothing is raised
    assert handler.received() == signal.SIGTERM and ran == ["teardown"]

    handler.release(quiet=False)  # the command returned in a process that goes on (a test, here)
    with pytest.raises(KeyboardInterrupt) as passed_on:
        deliver(signal.SIGINT)
    assert not isinstance(passed_on.value, handler.Stopped)
    handler.release(quiet=True)  # the process is ending: a late signal changes nothing
    deliver(signal.SIGINT)
    assert ran == ["teardown"]


def test_a_signal_while_the_command_line_is_imported_is_exit_130_not_a_traceback():
    """``python -m obai_e2e``: the handler is in place before the command line is imported; a SIGINT that
    lands in that import (here sent from inside it, so it always does) ends the process the same way."""
    import subprocess
    import sys

    code = (
        "import builtins, os, runpy, signal, sys\n"
        "real = builtins.__import__\n"
        "def importing(name, *args, **kwargs):\n"
        "    if name == 'cli' and kwargs.get('level', args[3] if len(args) > 3 else 0) == 1:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = importing\n"
        "sys.argv = ['obai_e2e', '--help']\n"
        "runpy.run_module('obai_e2e', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr, done.stdout) == (130, "obai-e2e: interrupted\n", "")
