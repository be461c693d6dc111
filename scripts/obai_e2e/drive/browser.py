"""A headless Chromium under Playwright, on a thread of its own, watched from outside.

Calls go in (a function of the browser and its arguments, with the time it may take);
their results come out, or an exception that says what became of the browser. Playwright
is an optional dependency (the ``ui`` extra) and is imported only when a unit on the ui
channel runs. Its objects belong to the thread that made them, so a run has one browser
thread that serves the calls one at a time (units on the cli channel keep running in
parallel).

Chromium carries a mark in its environment (``OBAI_E2E_TURN=browser-…``), as a turn's
processes do, so that the whole browser can be ended from any thread: by the watchdog
when a call outlives its time (a page that blocks its own event loop answers nothing, and
Playwright's own timeouts cannot end a script call), at the end of the run, and on
SIGINT/SIGTERM. A browser that died is launched again before the next call; the call it
died in raises :class:`BrowserCrashed`, so that its question can be asked again.
"""
from __future__ import annotations

import os
import queue
import threading
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Callable

from ..base import procs
from ..base.child_env import public_environ
from ..base.errors import NotReady
from ..config.ui import UiConfig
from .turn import track, untrack

LAUNCH_TIMEOUT_S = 60.0
UNWIND_S = 10.0   # how long a call may take to return once its browser was ended
STOP_S = 30.0


class BrowserCrashed(Exception):
    """Chromium died while the call ran (not ended by the harness)."""


class BrowserStalled(Exception):
    """The call outlived its time; the browser was ended from outside."""


class BrowserUnavailable(Exception):
    """Chromium could not be launched again after it died."""


def _playwright() -> Callable:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise NotReady("the ui channel needs Playwright, which is not installed: install the ui extra "
                       "(uv sync --extra ui, or pip install 'obai-e2e-regression[ui]'), or run without ui units "
                       "(--channel cli)") from None
    return sync_playwright


@dataclass
class _Call:
    fn: Callable
    args: tuple
    future: Future = field(default_factory=Future)
    started: threading.Event = field(default_factory=threading.Event)
    ended_by_us: bool = False


class BrowserThread(threading.Thread):
    """Owns Playwright and one Chromium at a time; runs the calls handed to it, one at a time."""

    def __init__(self, ui: UiConfig):
        super().__init__(name="ui-browser", daemon=True)
        self.ui = ui
        self.mark = f"browser-{uuid.uuid4().hex[:12]}"
        self.calls: queue.Queue = queue.Queue()
        self.ready: Future = Future()
        self.launches = 0
        self.broken = False  # its Playwright driver stopped answering: the channel starts another thread
        self._driver: list[int] = []

    def run(self) -> None:
        try:
            before = _driver_children()
            manager = _playwright()().start()
            self._driver = sorted(_driver_children() - before)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self.ready.set_exception(exc)
            return
        try:
            browser = self._launch(manager)
        except NotReady as exc:
            manager.stop()
            self.ready.set_exception(exc)
            return
        track(self.mark, mark=self.mark)
        self.ready.set_result(True)
        try:
            while (item := self.calls.get()) is not None:
                if not browser.is_connected():
                    try:
                        browser = self._launch(manager)
                    except NotReady as exc:
                        item.started.set()
                        item.future.set_exception(BrowserUnavailable(str(exc)))
                        continue
                item.started.set()
                self._serve(browser, item)
        finally:
            try:
                browser.close()
                manager.stop()
            except Exception:  # noqa: BLE001 - ending a dead browser or driver
                pass
            self.end_browser()
            untrack(self.mark)

    def _launch(self, manager: Any) -> Any:
        if not self.ui.browser_executable.exists():
            raise NotReady(f"the ui channel's browser {self.ui.browser_executable} does not exist (install "
                           "Chromium, e.g. apt-get install -y chromium, or set ui.browser.executable)")
        self.end_browser()  # what is left of a browser that died
        try:
            browser = manager.chromium.launch(executable_path=str(self.ui.browser_executable), headless=True,
                                              args=list(self.ui.browser_args), timeout=LAUNCH_TIMEOUT_S * 1000,
                                              env={**public_environ(os.environ), procs.MARK_VAR: self.mark})
        except Exception as exc:  # noqa: BLE001
            raise NotReady(f"the ui channel could not start Chromium: {exc}") from None
        self.launches += 1
        return browser

    def _serve(self, browser: Any, item: _Call) -> None:
        try:
            result, error = item.fn(browser, *item.args), None
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            result, error = None, exc
        if not item.ended_by_us and not browser.is_connected():
            error = BrowserCrashed(f"Chromium died during the question ({_first_line(error)})")
        if error is not None:
            item.future.set_exception(error)
        else:
            item.future.set_result(result)

    def call(self, fn: Callable, *args: Any, budget_s: float) -> Any:
        """``fn(browser, *args)`` on the browser thread; the browser is ended if it outlives ``budget_s``
        once started (time waiting for earlier calls is not counted)."""
        item = _Call(fn, args)
        self.calls.put(item)
        while not item.started.wait(0.5):
            if not self.is_alive():
                raise BrowserUnavailable("the browser thread has ended")
        try:
            return item.future.result(timeout=budget_s)
        except FutureTimeout:
            pass
        item.ended_by_us = True
        self.end_browser()
        try:
            item.future.result(timeout=UNWIND_S)
        except FutureTimeout:
            self._give_up()
        except Exception:  # noqa: BLE001 - the call failed with its browser, as expected
            pass
        raise BrowserStalled(f"the page did not answer within {budget_s:g} s; its browser was ended")

    def end_browser(self) -> list[int]:
        """Kill Chromium and every process it started (any thread may call this)."""
        return procs.end_all(mark=self.mark)

    def _give_up(self) -> None:
        """The driver did not return the call though its browser is gone: end the driver too."""
        self.broken = True
        for pid in self._driver:
            try:
                os.kill(pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
        self.calls.put(None)

    def stop(self) -> None:
        self.calls.put(None)
        self.join(STOP_S)
        if self.is_alive():
            self._give_up()
        self.end_browser()
        untrack(self.mark)


def _driver_children() -> set[int]:
    """This process's children that are a Playwright driver (``node … run-driver``)."""
    me, found = os.getpid(), set()
    for name in os.listdir("/proc") if procs.has_table() else ():
        if name.isdigit():
            entry = procs.stat(int(name))
            if entry is not None and entry.ppid == me:
                try:
                    with open(f"/proc/{name}/cmdline", "rb") as fh:
                        if b"run-driver" in fh.read():
                            found.add(entry.pid)
                except OSError:
                    continue
    return found


def _first_line(exc: BaseException | None) -> str:
    if exc is None:
        return "it disconnected"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
