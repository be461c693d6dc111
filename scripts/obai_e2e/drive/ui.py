"""The ui channel: one question asked through the target's web UI, in Chromium under Playwright.

A unit's query, session, correlation tag and time (its ``timeout_s``) go in; a
``TurnResult`` and the browser's ``UiObservation`` come out, the answer capped like a CLI
answer. The channel owns one browser thread (browser.py) per target and process; when
target.yaml starts the UI (``ui.server``), the channel starts it once (ui_server.py), in
its own sandbox with the run's canaries planted, and stops it at the end. The question
may take the unit's time and a grace for reading the page; a page that takes longer has
its browser ended (the unit's answer never finished), and a browser that crashed is
launched again for the next question.

An upstream outage (the UI or its backend down) is what the driver sees when the page
does not load (connection refused, HTTP 5xx), or when the answer ends in an error, an
error banner or no end at all while the health URL is unreachable or not 2xx. The UI
rules then have no outcome: their categories are not assessable, never loss.
"""
from __future__ import annotations

import atexit
import threading
import time

from ..base import tls
from ..base.clock import iso, utc_now
from ..base.errors import Interrupted, NotReady
from ..base.procs import STOPPING
from ..config.target import TargetConfig
from ..config.ui import UiConfig
from ..trace.backend import Backend
from .browser import LAUNCH_TIMEOUT_S, BrowserCrashed, BrowserStalled, BrowserThread, BrowserUnavailable
from .canaries import Planted
from .page import CRASHED, DONE, ENDED, FAILED, NOT_LOADED, TIMEOUT, UiObservation, ask_page, first_line
from .turn import TurnResult
from .ui_server import UiServer

HEALTH_TIMEOUT_S = 5.0
READ_GRACE_S = 5.0  # beyond the unit's time: reading the page and closing its context


class UiChannel:
    """The ui channel of one target for one process: a browser, and the UI server when the harness starts it."""

    def __init__(self, config: TargetConfig, backend: Backend):
        if config.ui is None:
            raise NotReady(f"{config.path}: a unit runs on the ui channel but the target configuration has no ui "
                           "section")
        self.config, self.ui, self.backend = config, config.ui, backend
        self._lock = threading.Lock()
        self._browser: BrowserThread | None = None
        self._server: UiServer | None = None
        self.base = self.ui.base_url or ""

    @property
    def planted(self) -> Planted:
        """Canaries planted in the UI server's sandbox (none when the harness did not start it)."""
        return self._server.planted if self._server else Planted()

    def _ensure(self) -> BrowserThread:
        with self._lock:
            if self._browser is not None and self._browser.broken:
                self._browser.stop()  # its driver stopped answering: a new thread, a new driver
                self._browser = None
            if self._browser is None:
                if self.ui.server is not None and self._server is None:
                    server = UiServer(self.config, self.backend)
                    self.base = server.start()
                    self._server = server
                browser = BrowserThread(self.ui)
                browser.start()
                try:
                    browser.ready.result(timeout=LAUNCH_TIMEOUT_S + READ_GRACE_S)
                except TimeoutError:
                    browser.stop()
                    raise NotReady(f"the ui channel's browser did not start within {LAUNCH_TIMEOUT_S:g} s") from None
                self._browser = browser
            return self._browser

    def ask(self, query: str, session: str, tag: str, timeout_s: float | None = None) -> tuple[TurnResult, UiObservation]:
        """Ask one question in a fresh browser context within ``timeout_s`` (default: ui.timeout_s); never
        raises for the target's own failures, nor for its browser's. When the runner is stopping, a question
        is neither asked nor answered (the unit stays pending)."""
        if STOPPING.is_set():
            raise Interrupted("the run is stopping; this question was not asked")
        browser = self._ensure()
        timeout_s = timeout_s or self.ui.timeout_s
        url = self.ui.page_url(self.base, session, tag)
        started = utc_now()
        t0 = time.monotonic()
        try:
            obs = browser.call(ask_page, self.ui, url, query, timeout_s, budget_s=timeout_s + READ_GRACE_S)
        except BrowserStalled as exc:
            obs = UiObservation(url=url, state=TIMEOUT, browser=ENDED, outage_reason=str(exc))
        except BrowserCrashed as exc:
            obs = UiObservation(url=url, state=FAILED, browser=CRASHED, outage_reason=str(exc))
        except BrowserUnavailable as exc:
            obs = UiObservation(url=url, state=NOT_LOADED, browser=CRASHED, outage=True,
                                outage_reason=f"the browser could not be started again: {first_line(exc)}")
        if STOPPING.is_set():
            raise Interrupted("the run was stopped during this question; it will be asked again on resume")
        if obs.browser is None and (obs.state != DONE or obs.banner is not None or obs.outage):
            _check_health(self.ui, self.base, obs)
        turn = TurnResult(argv=["ui", url], exit_code=obs.exit_code, stdout=obs.answer,
                          stderr_tail=obs.banner or "", started_at=iso(started), ended_at=iso(utc_now()),
                          wall_ms=int((time.monotonic() - t0) * 1000), correlation_tag=tag,
                          stdout_truncated=obs.answer_truncated, stdout_bytes=obs.answer_bytes or 0,
                          timeout_s=timeout_s)
        return turn, obs

    def close(self) -> None:
        with self._lock:
            browser, self._browser = self._browser, None
            server, self._server = self._server, None
        if browser is not None:
            browser.stop()
        if server is not None:
            server.stop()


def _check_health(ui: UiConfig, base: str, obs: UiObservation) -> None:
    """Tell an outage from the UI's own error: the health URL unreachable or not 2xx is an outage."""
    url = ui.health(base)
    if url is None:
        return
    import httpx

    try:
        r = httpx.get(url, timeout=HEALTH_TIMEOUT_S, verify=tls.default_context())
        obs.health = {"url": url, "status": r.status_code, "error": None}
        down = not 200 <= r.status_code < 300
        why = f"the health check {url} answered HTTP {r.status_code}"
    except httpx.HTTPError as exc:
        obs.health = {"url": url, "status": None, "error": f"{type(exc).__name__}: {exc}"[:200]}
        down, why = True, f"the health check {url} failed ({type(exc).__name__})"
    if down:
        obs.outage = True
        obs.outage_reason = "; ".join(r for r in (obs.outage_reason, why) if r)


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
