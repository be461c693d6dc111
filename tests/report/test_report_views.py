"""report.html in Chromium at 1400 and 400 px: the table and card views, repeats grouped, unit anchors, the
highlighted answer difference, the run's own trace pages, and no sideways overflow at either width.

The run is the session's real demo run (its trace store already stopped), copied, with three repeats of one
case added and a baseline in which M3 passed with another answer.
"""
from __future__ import annotations

import json
import re

import pytest
from obai_e2e.base.mdtable import table_rows
from obai_e2e.report.diff import build_diff, diff_fields
from obai_e2e.report.html import write_report
from obai_e2e.report.report_md import COLUMNS
from obai_e2e.report.results import summarize
from playwright.sync_api import expect

from .helpers import ARTIFACTS, load, save

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1400, 400)
OLD_WORDS = "an earlier answer that said something else"


@pytest.fixture
def compared(run_copy):
    results = load(run_copy)
    md1 = next(u for u in results["units"] if u["unit_id"] == "MD1")
    for k, verdict in enumerate(("pass", "pass", "fail"), start=1):
        rep = json.loads(json.dumps(md1))
        rep.update(unit_id=f"S.r{k}", case_id="S", repeat=k, stochastic=True, verdict=verdict,
                   reasons=["hub.empty_response"] if verdict == "fail" else [])
        results["units"].append(rep)
    results["summary"] = summarize(results["units"])
    save(run_copy, results)  # report.md stays as the run wrote it
    base = json.loads(json.dumps(results))
    m3 = next(u for u in base["units"] if u["unit_id"] == "M3")
    m3.update(verdict="pass", reasons=[], answer=f"{OLD_WORDS} {m3['answer']}", rule_outcomes=[])
    base["run"]["run_id"] = "2026-01-01/000000"
    diff = build_diff(results["run"]["run_id"], [diff_fields(u) for u in results["units"]],
                      {**base, "units": [diff_fields(u) for u in base["units"]]})
    (run_copy / "diff.json").write_text(json.dumps(diff), encoding="utf-8")
    write_report(run_copy)
    return run_copy


def overflow(page) -> tuple[int, list[str]]:
    """How far the page reaches past the window's right edge, and the elements that do."""
    return tuple(page.evaluate("""() => {
      const W = document.documentElement.clientWidth, out = [];
      for (const e of document.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        let inner = false;  // inside a box of its own that scrolls sideways
        for (let p = e.parentElement; p && !inner; p = p.parentElement) inner = getComputedStyle(p).overflowX !== 'visible';
        if (r.width > 0 && r.right > W + 0.5 && !inner) out.push(`${e.tagName}.${e.className} right ${r.right.toFixed(1)}`);
      }
      return [document.documentElement.scrollWidth - W, out.slice(0, 12)];
    }"""))


@pytest.mark.parametrize("width", WIDTHS)
def test_both_views_fit_the_width_and_show_everything(page, compared, width):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto((compared / "report.html").resolve().as_uri())

    # the compact table: one row per unit, the case's three repeats under one row with their pass rate
    expect(page.locator("tr.urow")).to_have_count(6)
    group = page.locator("tr.grow[data-group=S]")
    assert "2 of 3 pass (67 %)" in group.inner_text() and "S ×3" in group.inner_text()
    group.click()
    expect(page.locator("tr.urow.member")).to_have_count(3)
    page.locator("tr#unit-M3").click()  # a row opens its card below it
    expect(page.locator("tr.detail article.unit[data-unit=M3]")).to_have_count(1)

    # what changed: M3's answer, the baseline's words struck, the new ones marked
    change = page.locator("#changes article.change[data-unit=M3]")
    assert OLD_WORDS in change.locator("del").first.inner_text()
    assert change.locator("ins").count() == 0 or OLD_WORDS not in change.locator("ins").first.inner_text()
    for summary in page.locator("#changes details:not([open]) > summary").all():
        summary.click()
    px, wide = overflow(page)
    assert px <= 0, f"{px} px sideways at {width} px (table view): {wide}"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"report-table-{width}.png"), full_page=True)

    # the cards: every unit a card, the repeats in one expandable group
    page.click("button[data-view=cards]")
    expect(page.locator("article.unit")).to_have_count(9)  # the group stays open, as it was in the table
    page.locator("details.group[data-group=S] > summary").click()
    expect(page.locator("article.unit:visible")).to_have_count(6)
    page.locator("details.group[data-group=S] > summary").click()
    expect(page.locator("article.unit:visible")).to_have_count(9)
    for summary in page.locator("#units details.trace > summary").all():
        summary.click()
    px, wide = overflow(page)
    assert px <= 0, f"{px} px sideways at {width} px (cards view): {wide}"
    page.screenshot(path=str(ARTIFACTS / f"report-cards-{width}.png"), full_page=True)
    assert errors == []


def test_a_unit_anchor_opens_it_wherever_it_is(page, compared):
    page.goto((compared / "report.html").resolve().as_uri() + "#unit-S.r3")
    row = page.locator("tr.urow.target")
    expect(row).to_have_count(1)
    assert row.get_attribute("id") == "unit-S.r3"
    expect(page.locator("tr.detail article.unit[data-unit='S.r3']")).to_have_count(1)
    page.fill("#f-search", "no unit says this")  # a unit hidden by the filters is found all the same
    page.evaluate("location.hash = '#unit-F1'")
    expect(page.locator("tr.urow.target#unit-F1")).to_have_count(1)


def test_trace_links_open_the_runs_own_pages_without_a_store(page, compared):
    """The session's trace store stopped after the run, and this is a copy of the run directory."""
    page.goto((compared / "report.html").resolve().as_uri())
    link = page.locator("tr#unit-M3 a.trace-link")
    assert link.get_attribute("href") == "traces/M3.html"
    link.click()
    expect(page.locator("li.span.cited")).not_to_have_count(0)
    assert "routing.sequence_violation" in page.locator("li.span.cited").first.inner_text()
    page.locator("a", has_text="M3 in report.html").click()
    expect(page.locator("tr.urow.target#unit-M3")).to_have_count(1)


def test_no_report_link_depends_on_the_trace_stores_port(compared):
    """Links into the local store die when it restarts; every trace link of the run is relative instead."""
    rows = table_rows((compared / "report.md").read_text(encoding="utf-8"), COLUMNS)
    links = [m for r in rows for m in re.findall(r"\]\(([^)]+)\)", r["Trace"])]
    assert links and all(link.startswith("traces/") and (compared / link).is_file() for link in links), links
    data = (compared / "report.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', data, re.S)[1]
    units = json.loads(block)["units"]
    assert all(not u["trace_links"] for u in units if u["trace_pages"])
