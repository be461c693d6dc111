"""One question asked on a page of the target's web UI, within the unit's time.

A browser (browser.py), the ui section's selectors, a page URL, a question and the unit's
``timeout_s`` go in; a ``UiObservation`` comes out: the state the answer ended in, its
text (capped like a CLI answer), its timings, an error banner, an exit code the page
shows, or why the page did not load. Every wait is bounded by what is left of the unit's
time: loading, the selectors, typing, sending, the end of the answer. Reading what the
page shows is one script call with no timeout of its own; a page that blocks its own event
loop never answers it, which the browser thread's watchdog ends from outside.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from ..base.record import Record
from ..config.ui import UiConfig
from .turn import MAX_STDOUT_BYTES

SETTLE_MS = 300          # after the answer is done, how long late events (a banner) may take to show
BANNER_CHARS = 2000
POLL_MS = 50
DONE, FAILED, TIMEOUT, NOT_LOADED = "done", "failed", "timeout", "not_loaded"
CRASHED, ENDED = "crashed", "ended"  # what happened to the browser during the question, if anything

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
# What the page shows, in one call: only the first ``limit`` characters of the answer cross over.
_SHOWN = """([answer, banner, exitSel, exitAttr, limit, bannerLimit]) => {
  const r = window.__obaiE2E;
  if (r) r.check();
  const all = document.querySelectorAll(answer);
  const text = all.length ? all[all.length - 1].innerText : "";
  const visible = (el) => {
    const box = el.getBoundingClientRect();
    return getComputedStyle(el).visibility !== "hidden" && box.width > 0 && box.height > 0;
  };
  let shownBanner = null;
  const b = banner ? document.querySelector(banner) : null;
  if (b && visible(b)) shownBanner = (b.innerText.trim() || "(an error banner without text)").slice(0, bannerLimit);
  let exit = null;
  if (exitSel && exitAttr) {
    const holders = document.querySelectorAll(exitSel);
    if (holders.length) exit = holders[holders.length - 1].getAttribute(exitAttr);
  }
  return {rec: r ? {t0: r.t0, installed: r.installed, first: r.first, done: r.done, failed: r.failed, banner: r.banner}
              : {}, answer: text.slice(0, limit), bytes: new TextEncoder().encode(text).length,
          banner: shownBanner, exit: exit === null ? null : String(exit).slice(0, 40)};
}"""


@dataclass
class UiObservation(Record):
    """What the browser saw of one question on the ui channel."""

    url: str = ""
    state: str = ""                      # done | failed | timeout | not_loaded
    answer: str = ""                     # the newest answer's text as shown (its first MAX_STDOUT_BYTES)
    first_token_ms: int | None = None    # from sending the question to the first text of the answer
    done_ms: int | None = None           # from sending the question to the answer marked done
    banner: str | None = None            # the text of a visible error banner
    exit_code: int | None = None
    outage: bool = False
    outage_reason: str | None = None
    health: dict[str, Any] | None = None
    answer_bytes: int | None = None      # the whole answer's size as shown, in UTF-8 bytes
    answer_truncated: bool = False       # the page showed more than the harness keeps
    browser: str | None = None           # crashed | ended (by the harness: the page did not answer in time)
    attempts: int = 1                    # 2: the browser crashed during the first and the question was asked again


def ask_page(browser: Any, ui: UiConfig, url: str, query: str, timeout_s: float) -> UiObservation:
    """On the browser thread: load the page, ask, wait for the end, read what is shown, all within ``timeout_s``."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.monotonic() + timeout_s

    def left_ms() -> float:
        return max(1.0, (deadline - time.monotonic()) * 1000)

    obs = UiObservation(url=url)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(left_ms())
        try:
            response = page.goto(url, wait_until="load", timeout=left_ms())
        except PlaywrightTimeout:
            obs.state, obs.outage_reason = NOT_LOADED, f"the page did not load within {timeout_s:g} s"
            return obs
        except PlaywrightError as exc:
            obs.state, obs.outage = NOT_LOADED, True
            obs.outage_reason = f"the page did not load: {first_line(exc)}"
            return obs
        if response is not None and response.status >= 500:
            obs.state, obs.outage = NOT_LOADED, True
            obs.outage_reason = f"the page answered HTTP {response.status}"
            return obs
        try:
            if ui.ready:
                page.wait_for_selector(ui.ready, timeout=left_ms())
            page.wait_for_selector(ui.question, timeout=left_ms())
            page.evaluate(_OBSERVER, [ui.answer, ui.done, ui.failed, ui.error_banner])
            page.fill(ui.question, query, timeout=left_ms())
        except PlaywrightTimeout:
            obs.state = NOT_LOADED
            obs.outage_reason = f"the page did not take the question within {timeout_s:g} s"
            return obs
        try:
            # Once sending has begun the question may be out, whatever happens next: its trace is looked for.
            if ui.submit:
                page.click(ui.submit, timeout=left_ms())
            else:
                page.press(ui.question, "Enter", timeout=left_ms())
            # Polled on a timer, not on animation frames: a page busy drawing a long answer draws few frames.
            page.wait_for_function(_FINISHED, timeout=left_ms(), polling=POLL_MS)
            page.wait_for_timeout(min(SETTLE_MS, left_ms()))
        except PlaywrightTimeout:
            pass
        _read(page, ui, obs)
    except PlaywrightError as exc:
        # The page went away mid-question (the server stopped): an outage if the health check agrees.
        obs.state = obs.state or FAILED
        obs.outage_reason = f"the page failed: {first_line(exc)}"
    finally:
        context.close()
    return obs


def _read(page: Any, ui: UiConfig, obs: UiObservation) -> None:
    shown = page.evaluate(_SHOWN, [ui.answer, ui.error_banner, ui.exit_code_selector, ui.exit_code_attribute,
                                   MAX_STDOUT_BYTES, BANNER_CHARS])
    rec = shown.get("rec") or {}
    t0 = rec.get("t0") if rec.get("t0") is not None else rec.get("installed")

    def since(key: str) -> int | None:
        value = rec.get(key)
        return None if value is None or t0 is None else max(0, int(round(value - t0)))

    obs.first_token_ms, obs.done_ms = since("first"), since("done")
    if rec.get("done") is not None:
        obs.state = DONE
    elif rec.get("failed") is not None or rec.get("banner") is not None:
        obs.state = FAILED
    else:
        obs.state = TIMEOUT
    raw = str(shown.get("answer") or "").encode("utf-8", "replace")
    obs.answer = raw[:MAX_STDOUT_BYTES].decode("utf-8", "ignore")
    obs.answer_bytes = int(shown.get("bytes") or len(raw))
    obs.answer_truncated = obs.answer_bytes > len(obs.answer.encode("utf-8"))
    obs.banner = shown.get("banner")
    value = shown.get("exit")
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,9}", value.strip()):
        obs.exit_code = int(value)


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
