"""The ui channel: one question asked through the target's web UI, in Chromium under Playwright.

Playwright is an optional dependency (the ``ui`` extra) and is imported only when a unit
on the ui channel runs. Its objects belong to the thread that made them, so a run has one
browser thread that asks the questions one at a time (units on the cli channel keep
running in parallel). When target.yaml starts the UI (``ui.server``), the channel starts
it once, in its own sandbox with the run's canaries planted, and stops it at the end.

An upstream outage (the UI or its backend down) is what the driver sees when the page
does not load (connection refused, HTTP 5xx), or when the answer ends in an error, an
error banner or no end at all while the health URL is unreachable or not 2xx. The UI
rules then have no outcome: their categories are unbewertbar, never loss.
"""
from __future__ import annotations

import atexit
import os
import queue
import re
import signal
import subprocess
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

from ..base.clock import iso, utc_now
from ..base.errors import NotReady
from ..base.record import Record
from ..config.target import TargetConfig
from ..config.ui import UiConfig
from ..trace.backend import Backend
from .canaries import Planted, plant
from .sandbox import Sandbox, record_group
from .turn import TurnResult, track_group, untrack_group

SETTLE_MS = 300          # after the answer is done, how long late events (a banner) may take to show
HEALTH_TIMEOUT_S = 5.0
STOP_GRACE_S = 10.0
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


class _BrowserThread(threading.Thread):
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


class _Server:
    """The target's web UI, started by the harness in a sandbox of its own."""

    def __init__(self, config: TargetConfig, backend: Backend):
        self.config = config
        ui = config.ui
        assert ui is not None and ui.server is not None
        self.spec = ui.server
        base_env = {**os.environ, **config.target.env, **backend.sdk_env}
        self.box = Sandbox(config, f"ui-{uuid.uuid4().hex[:10]}", base_env)
        self.proc: subprocess.Popen | None = None
        self.planted = Planted()
        self.lines: list[str] = []

    def start(self) -> str:
        self.box.__enter__()
        self.planted = plant(self.config.canaries, self.box.dir)
        env = {**self.box.env(), **self.planted.env}
        log = open(self.box.dir / "ui-server.log", "wb")
        try:
            self.proc = subprocess.Popen(list(self.spec.command), cwd=str(self.box.workdir), env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                         start_new_session=True)
        except OSError as exc:
            log.close()
            self.box.teardown()
            raise NotReady(f"the web UI server {self.spec.command[0]!r} could not start ({exc}); check "
                           "ui.server.command in the target configuration") from None
        log.close()
        track_group(self.proc.pid)
        record_group(self.box.dir, self.proc.pid)
        found: Future = Future()
        threading.Thread(target=self._read, args=(found,), name="ui-server-stdout", daemon=True).start()
        try:
            return found.result(timeout=self.spec.start_timeout_s)
        except Exception as exc:  # noqa: BLE001 - timeout or exit before a URL
            tail = self._log_tail()
            self.stop()
            why = "exited" if not isinstance(exc, TimeoutError) else f"gave no URL within {self.spec.start_timeout_s:g} s"
            raise NotReady(f"the web UI server {' '.join(self.spec.command)} {why} "
                           f"(stdout: {' | '.join(self.lines[-3:]) or 'nothing'}; stderr: {tail or 'nothing'})") from None

    def _read(self, found: Future) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.lines = (self.lines + [line])[-20:]
            if not found.done():
                m = self.spec.url_pattern.search(line)
                if m:
                    found.set_result(m.group(1) if m.groups() else m.group(0))
        if not found.done():
            found.set_exception(RuntimeError("the server's stdout ended"))

    def _log_tail(self) -> str:
        try:
            return (self.box.dir / "ui-server.log").read_text(errors="replace").strip()[-400:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        if proc is not None:
            untrack_group(proc.pid)
        self.box.teardown()


class UiChannel:
    """The ui channel of one target for one process: a browser, and the UI server when the harness starts it."""

    def __init__(self, config: TargetConfig, backend: Backend):
        if config.ui is None:
            raise NotReady(f"{config.path}: a unit runs on the ui channel but the target configuration has no ui "
                           "section")
        self.config, self.ui, self.backend = config, config.ui, backend
        self._lock = threading.Lock()
        self._browser: _BrowserThread | None = None
        self._server: _Server | None = None
        self.base = self.ui.base_url or ""

    @property
    def planted(self) -> Planted:
        """Canaries planted in the UI server's sandbox (none when the harness did not start it)."""
        return self._server.planted if self._server else Planted()

    def _ensure(self) -> _BrowserThread:
        with self._lock:
            if self._browser is None:
                if self.ui.server is not None and self._server is None:
                    server = _Server(self.config, self.backend)
                    self.base = server.start()
                    self._server = server
                browser = _BrowserThread(self.ui)
                browser.start()
                browser.ready.result()
                self._browser = browser
            return self._browser

    def ask(self, query: str, session: str, tag: str) -> tuple[TurnResult, UiObservation]:
        """Ask one question in a fresh browser context; never raises for the target's own failures."""
        browser = self._ensure()
        url = self.ui.page_url(self.base, session, tag)
        started = utc_now()
        t0 = time.monotonic()
        obs = browser.call(_ask, self.ui, url, query)
        if obs.state != DONE or obs.banner is not None or obs.outage:
            _check_health(self.ui, self.base, obs)
        turn = TurnResult(argv=["ui", url], exit_code=obs.exit_code, stdout=obs.answer,
                          stderr_tail=obs.banner or "", started_at=iso(started), ended_at=iso(utc_now()),
                          wall_ms=int((time.monotonic() - t0) * 1000), correlation_tag=tag)
        return turn, obs

    def close(self) -> None:
        with self._lock:
            browser, self._browser = self._browser, None
            server, self._server = self._server, None
        if browser is not None:
            browser.stop()
        if server is not None:
            server.stop()


def _ask(browser: Any, ui: UiConfig, url: str, query: str) -> UiObservation:
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


def _check_health(ui: UiConfig, base: str, obs: UiObservation) -> None:
    """Tell an outage from the UI's own error: the health URL unreachable or not 2xx is an outage."""
    url = ui.health(base)
    if url is None:
        return
    import httpx

    try:
        r = httpx.get(url, timeout=HEALTH_TIMEOUT_S)
        obs.health = {"url": url, "status": r.status_code, "error": None}
        down = not 200 <= r.status_code < 300
        why = f"the health check {url} answered HTTP {r.status_code}"
    except httpx.HTTPError as exc:
        obs.health = {"url": url, "status": None, "error": f"{type(exc).__name__}: {exc}"[:200]}
        down, why = True, f"the health check {url} failed ({type(exc).__name__})"
    if down:
        obs.outage = True
        obs.outage_reason = "; ".join(r for r in (obs.outage_reason, why) if r)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


# One channel per target configuration and process, made on first use.
_CHANNELS: dict[str, UiChannel] = {}
_CHANNELS_LOCK = threading.Lock()


def channel_for(config: TargetConfig, backend: Backend) -> UiChannel:
    with _CHANNELS_LOCK:
        key = str(config.path)
        channel = _CHANNELS.get(key)
        if channel is None:
            if not _CHANNELS:
                atexit.register(close_all)
            channel = _CHANNELS[key] = UiChannel(config, backend)
        return channel


def close_all() -> None:
    """Stop every browser and UI server this process started (end of a run, exit, signals)."""
    with _CHANNELS_LOCK:
        channels = list(_CHANNELS.values())
        _CHANNELS.clear()
    for channel in channels:
        channel.close()
