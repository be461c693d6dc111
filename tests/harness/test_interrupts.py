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
    for name, value in (("_hooks", []), ("_allowances", []), ("_forces", []), ("_watchdog", []),
                        ("_received", []), ("_previous", {}),
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

    assert len(handler._watchdog) == 1 and not handler._watchdog[0].is_set()  # the stop's watchdog is armed
    handler.release(quiet=False)  # the command returned in a process that goes on (a test, here)
    assert not handler._watchdog  # and disarmed: it never ends this process
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


def test_a_stop_that_hangs_is_ended_by_its_watchdog_with_the_stacks_and_the_force_hooks(tmp_path):
    """A stop hook that waits forever (here: for a lock the interrupted main thread holds, the way a
    teardown could) does not keep the process alive: once its allowance is over the stacks go to
    stderr, the force hook kills what it must, and the process ends with 130."""
    import subprocess
    import sys

    forced = tmp_path / "forced"
    code = (
        "import os, sys, threading, time\n"
        "from obai_e2e.base import interrupts\n"
        "interrupts.STOP_WITHIN_S = 0.5\n"
        "held = threading.Lock()\n"
        "def teardown():\n"
        "    with held:\n"
        "        pass\n"
        f"interrupts.on_stop(teardown, allowance=lambda: 0.5, force=lambda: open({str(forced)!r}, 'w').close())\n"
        "interrupts.install()\n"
        "with held:\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 >= 1.0  # not before its allowance (0.5 s and the hook's 0.5 s)
    assert "the stop after SIGINT did not finish within 1 s" in err
    assert "in teardown" in err and "Thread 0x" in err  # every thread's stack, the hanging hook's among them
    assert forced.exists()


def test_a_stop_that_finishes_in_time_is_not_cut_short(tmp_path):
    """The watchdog only ends a stop that overran: a teardown within its allowance finishes, and the
    command's own exit (130, from the command line) is what the process ends with."""
    import subprocess
    import sys

    done = tmp_path / "done"
    code = (
        "import sys, time\n"
        "from obai_e2e.base import interrupts\n"
        "interrupts.STOP_WITHIN_S = 0.2\n"
        f"interrupts.on_stop(lambda: (time.sleep(1.0), open({str(done)!r}, 'w').close()), allowance=lambda: 3.0,\n"
        "                   force=lambda: sys.stderr.write('forced\\n'))\n"
        "interrupts.install()\n"
        "try:\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(600)\n"
        "except interrupts.Stopped:\n"
        "    time.sleep(1.0)\n"
        "    sys.exit(7)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (7, "")
    assert done.exists()
