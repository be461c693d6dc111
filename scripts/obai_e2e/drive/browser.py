"""A headless Chromium under Playwright, and one question asked on a page of the target's web UI.

A page URL, the ui section's selectors and a question go in; a ``UiObservation`` comes
out: the state the answer ended in, its text, its timings, an error banner, an exit code
the page shows, or why the page did not load. Playwright is an optional dependency (the
``ui`` extra) and is imported only when a unit on the ui channel runs. Its objects belong
to the thread that made them, so a run has one browser thread that asks the questions one
at a time (units on the cli channel keep running in parallel).
"""
from __future__ import annotations

import queue
import re
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

from ..base.errors import NotReady
from ..base.record import Record
from ..config.ui import UiConfig

SETTLE_MS = 300          # after the answer is done, how long late events (a banner) may take to show
DONE, FAILED, TIMEOUT, NOT_LOADED = "done", "failed", "timeout", "not_loaded"

# Installed in the page before the question is sent: records, relative to the send, when
# the answer first has text, when it is done or failed, and when an error banner shows.
_OBSERVER = """([answer, done, failed, banner]) => {
  const rec = {t0: null, installed: performance.now(), first: null, done: null, failed: null, banner: null};
  window.__obaiE2E = rec;
  const start = () => { if (rec.t0 === null) rec.t0 = performance.now(); };
  document.addEventListener("click", start, true);
  document.addEventListener("keydown", (e) => { if (e.key === "Enter") start(); }, true);
  const seen = (sel) => sel && document.querySelector(sel) !== null;
  const check = () => {
    if (rec.t0 === null) return;
    const now = performance.now();
    if (rec.first === null) {
      const a = document.querySelector(answer);
      if (a && a.textContent.trim()) rec.first = now;
    }
    if (rec.done === null && seen(done)) rec.done = now;
    if (rec.failed === null && seen(failed)) rec.failed = now;
    if (rec.banner === null && seen(banner)) rec.banner = now;
  };
  new MutationObserver(check).observe(document.documentElement,
    {subtree: true, childList: true, characterData: true, attributes: true});
  rec.check = check;
}"""
_FINISHED = "() => { const r = window.__obaiE2E; r.check(); return r.done !== null || r.failed !== null || r.banner !== null; }"


@dataclass
class UiObservation(Record):
    """What the browser saw of one question on the ui channel."""

    url: str = ""
    state: str = ""                      # done | failed | timeout | not_loaded
    answer: str = ""                     # the newest answer's text as shown
    first_token_ms: int | None = None    # from sending the question to the first text of the answer
    done_ms: int | None = None           # from sending the question to the answer marked done
    banner: str | None = None            # the text of a visible error banner
    exit_code: int | None = None
    outage: bool = False
    outage_reason: str | None = None
    health: dict[str, Any] | None = None


def _playwright() -> Callable:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise NotReady("the ui channel needs Playwright, which is not installed: install the ui extra "
                       "(uv sync --extra ui, or pip install 'obai-e2e-regression[ui]'), or run without ui units "
                       "(--channel cli)") from None
    return sync_playwright


class BrowserThread(threading.Thread):
    """Owns Playwright and one Chromium; runs the calls handed to it, one at a time."""

    def __init__(self, ui: UiConfig):
        super().__init__(name="ui-browser", daemon=True)
        self.ui = ui
        self.calls: queue.Queue = queue.Queue()
        self.ready: Future = Future()

    def run(self) -> None:
        try:
            manager = _playwright()().start()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self.ready.set_exception(exc)
            return
        try:
            if not self.ui.browser_executable.exists():
                raise NotReady(f"the ui channel's browser {self.ui.browser_executable} does not exist (install "
                               "Chromium, e.g. apt-get install -y chromium, or set ui.browser.executable)")
            browser = manager.chromium.launch(executable_path=str(self.ui.browser_executable), headless=True,
                                              args=list(self.ui.browser_args))
        except BaseException as exc:  # noqa: BLE001
            manager.stop()
            self.ready.set_exception(exc if isinstance(exc, NotReady) else
                                     NotReady(f"the ui channel could not start Chromium: {exc}"))
            return
        self.ready.set_result(True)
        try:
            while True:
                item = self.calls.get()
                if item is None:
                    break
                fn, args, future = item
                try:
                    future.set_result(fn(browser, *args))
                except BaseException as exc:  # noqa: BLE001
                    future.set_exception(exc)
        finally:
            try:
                browser.close()
            finally:
                manager.stop()

    def call(self, fn: Callable, *args: Any) -> Any:
        future: Future = Future()
        self.calls.put((fn, args, future))
        return future.result()

    def stop(self) -> None:
        self.calls.put(None)
        self.join(30)


def ask_page(browser: Any, ui: UiConfig, url: str, query: str) -> UiObservation:
    """On the browser thread: load the page, ask, wait for the end, read what is shown."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    obs = UiObservation(url=url)
    timeout_ms = ui.timeout_s * 1000
    context = browser.new_context()
    try:
        page = context.new_page()
        try:
            response = page.goto(url, wait_until="load", timeout=timeout_ms)
        except PlaywrightError as exc:
            obs.state, obs.outage = NOT_LOADED, True
            obs.outage_reason = f"the page did not load: {_first_line(exc)}"
            return obs
        if response is not None and response.status >= 500:
            obs.state, obs.outage = NOT_LOADED, True
            obs.outage_reason = f"the page answered HTTP {response.status}"
            return obs
        try:
            if ui.ready:
                page.wait_for_selector(ui.ready, timeout=timeout_ms)
            page.wait_for_selector(ui.question, timeout=timeout_ms)
        except PlaywrightTimeout:
            obs.state = NOT_LOADED
            obs.outage_reason = "the page never became ready for a question"
            return obs
        page.evaluate(_OBSERVER, [ui.answer, ui.done, ui.failed, ui.error_banner])
        page.fill(ui.question, query)
        if ui.submit:
            page.click(ui.submit)
        else:
            page.press(ui.question, "Enter")
        try:
            page.wait_for_function(_FINISHED, timeout=timeout_ms)
            page.wait_for_timeout(SETTLE_MS)
        except PlaywrightTimeout:
            pass
        _read(page, ui, obs)
    except PlaywrightError as exc:
        # The page went away mid-question (the server stopped): an outage if the health check agrees.
        obs.state = obs.state or FAILED
        obs.outage_reason = f"the page failed: {_first_line(exc)}"
    finally:
        context.close()
    return obs


def _read(page: Any, ui: UiConfig, obs: UiObservation) -> None:
    rec = page.evaluate("() => { const r = window.__obaiE2E; r.check(); return {t0: r.t0, installed: r.installed, "
                        "first: r.first, done: r.done, failed: r.failed, banner: r.banner}; }")
    t0 = rec.get("t0") if rec.get("t0") is not None else rec.get("installed")

    def since(key: str) -> int | None:
        value = rec.get(key)
        return None if value is None else max(0, int(round(value - t0)))

    obs.first_token_ms, obs.done_ms = since("first"), since("done")
    if rec.get("done") is not None:
        obs.state = DONE
    elif rec.get("failed") is not None or rec.get("banner") is not None:
        obs.state = FAILED
    else:
        obs.state = TIMEOUT
    answers = page.locator(ui.answer)
    obs.answer = answers.last.inner_text() if answers.count() else ""
    if ui.error_banner:
        banners = page.locator(ui.error_banner)
        if banners.count() and banners.first.is_visible():
            obs.banner = banners.first.inner_text().strip() or "(an error banner without text)"
    if ui.exit_code_selector and ui.exit_code_attribute:
        holder = page.locator(ui.exit_code_selector)
        value = holder.last.get_attribute(ui.exit_code_attribute) if holder.count() else None
        if value is not None and re.fullmatch(r"-?\d+", value.strip()):
            obs.exit_code = int(value)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
