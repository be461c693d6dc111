"""Hostile text in every untrusted field stays text: nothing runs, nothing loads, all of it is visible.

The run is a real finished demo run whose results.json, report.md, suite.json and
TOP-REGRESSIONS.md were rewritten with payloads. The page is checked twice: as written
(escaping + Content-Security-Policy), and with the CSP removed, to prove the escaping
alone is enough.
"""
from __future__ import annotations

import re

import pytest
from obai_e2e.report.html import write_report
from playwright.sync_api import expect

from .helpers import ATTR_BREAK, HOSTILE, JS_LINK, SCRIPT_BREAK, make_hostile

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TRAP = """
window.__xss_hits = [];
Object.defineProperty(window, "__xss", {
  configurable: false,
  get: function () { return undefined; },
  set: function (v) { window.__xss_hits.push(String(v)); }
});
"""


@pytest.fixture
def hostile_page(run_copy):
    make_hostile(run_copy)
    path = write_report(run_copy)["report_html"]
    html = open(path, encoding="utf-8").read()
    no_csp = run_copy / "report-no-csp.html"
    stripped = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", html)
    assert stripped != html
    no_csp.write_text(stripped, encoding="utf-8")
    return run_copy / "report.html", no_csp


def visit(page, path):
    events = {"dialogs": [], "console": [], "requests": []}
    page.add_init_script(TRAP)
    page.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
    page.on("console", lambda m: events["console"].append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: events["console"].append(f"pageerror: {e}"))
    page.on("request", lambda r: events["requests"].append(r.url))
    url = path.resolve().as_uri()
    page.goto(url)
    page.click("button[data-view=cards]")
    page.wait_for_selector("article.unit")
    closed = page.locator("details.trace:not([open]) summary")
    while closed.count():
        closed.first.click()
    expect(page.locator("pre.answer:not(.followup)")).to_have_count(page.locator("article.unit").count())
    page.wait_for_timeout(300)  # let any (hypothetical) onload/onerror fire
    return url, events


@pytest.mark.parametrize("variant", ["as-written", "without-csp"])
def test_hostile_strings_are_inert_and_visible(page, hostile_page, variant):
    path = hostile_page[0] if variant == "as-written" else hostile_page[1]
    url, events = visit(page, path)

    assert page.evaluate("window.__xss_hits") == []
    assert events["dialogs"] == []
    assert events["console"] == []  # also: no CSP violation report, so nothing tried to run or load
    assert events["requests"] == [url]  # no network of any kind, not even for <img src=x>
    # The page's own charts, trace-page links and unit anchors are the only svg and a elements.
    injected = page.evaluate(
        "document.querySelectorAll('img, svg:not(.chart), a:not(.trace-link):not(.uid), iframe, object, embed, "
        "link, base, form, [onerror], [onload]').length")
    assert injected == 0
    hrefs = page.evaluate("Array.from(document.querySelectorAll('a.trace-link')).map(a => a.href)")
    pages = path.parent.resolve().as_uri() + "/traces/"
    assert hrefs and all(h.startswith((pages, "http://127.0.0.1:")) for h in hrefs), hrefs
    anchors = page.evaluate("Array.from(document.querySelectorAll('a.uid')).map(a => a.getAttribute('href'))")
    assert anchors and all(a.startswith("#unit-") for a in anchors)

    body = page.locator("body").inner_text()
    for text in HOSTILE:
        assert text in body, text
    cards = page.locator("#units").inner_text()
    assert cards.count(SCRIPT_BREAK) >= 6  # queries, answers, traces, judgments, reasons
    assert JS_LINK in page.locator("article.unit pre.answer").first.inner_text()
    assert ATTR_BREAK in page.locator("header.top").inner_text()  # the target name
    assert ATTR_BREAK in page.locator("#f-feature").inner_text()  # a feature name in the filter
    assert SCRIPT_BREAK in page.locator("#loss").inner_text()
    assert SCRIPT_BREAK in page.locator("#disabled-cases").inner_text()

    # The hostile feature still filters like any other value.
    page.select_option("#f-feature", ATTR_BREAK)
    expect(page.locator("article.unit")).to_have_count(1)
    assert page.evaluate("window.__xss_hits") == []
