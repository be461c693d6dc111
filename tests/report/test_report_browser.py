"""report.html in Chromium, in its cards view: counts, filters, cards, lazy traces, pagination, screenshot."""
from __future__ import annotations

import pytest
from obai_e2e.report.html import write_report
from playwright.sync_api import expect

from .helpers import ARTIFACTS, EXPECTED, replicate

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def report(page, demo_run):
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((demo_run.run_dir / "report.html").resolve().as_uri())
    page.click("button[data-view=cards]")
    page.wait_for_selector("article.unit")
    yield page
    assert errors == []  # no script error, no CSP violation


def shown_units(page) -> list[str]:
    return page.locator("article.unit").evaluate_all("els => els.map(e => e.getAttribute('data-unit'))")


def test_summary_counts(report, demo_run):
    summary = demo_run.results["summary"]
    for verdict in ("pass", "fail", "needs_review", "inconclusive"):
        assert report.locator(f"[data-count={verdict}]").inner_text() == str(summary[verdict])
    assert report.locator("[data-count=total]").inner_text() == "6"
    assert report.locator(".bar .seg").count() == 4
    assert "D1" in report.locator("#disabled-cases").inner_text()
    assert sorted(shown_units(report)) == sorted(EXPECTED)
    # problems first: the fail card leads
    assert shown_units(report)[0] == "M3"


def test_filter_by_verdict_feature_and_text(report):
    for box in report.locator("input[name=verdict]").all():
        if box.get_attribute("value") != "fail":
            box.uncheck()
    expect(report.locator("article.unit")).to_have_count(1)
    assert shown_units(report) == ["M3"]
    report.locator("input[name=verdict][value=needs_review]").check()
    expect(report.locator("article.unit")).to_have_count(3)
    assert sorted(shown_units(report)) == ["F1", "M3", "M5"]

    report.locator("button.stat[data-verdict='']").click()  # the total card shows everything again
    expect(report.locator("article.unit")).to_have_count(6)
    report.select_option("#f-feature", "async")
    expect(report.locator("article.unit")).to_have_count(1)
    assert shown_units(report) == ["A1"]
    report.select_option("#f-feature", "multi")
    expect(report.locator("article.unit")).to_have_count(2)
    assert sorted(shown_units(report)) == ["M3", "M5"]
    report.select_option("#f-feature", "")

    report.fill("#f-search", "poem")
    expect(report.locator("article.unit")).to_have_count(1)
    assert shown_units(report) == ["R1"]
    report.fill("#f-search", "no unit says this")
    report.wait_for_selector("#units .empty")
    report.fill("#f-search", "")
    expect(report.locator("article.unit")).to_have_count(6)

    report.locator("button.stat[data-verdict=inconclusive]").click()
    expect(report.locator("article.unit")).to_have_count(1)
    assert shown_units(report) == ["R1"]


def test_fail_card_shows_code_judgment_and_evidence(report, demo_run):
    m3 = next(u for u in demo_run.results["units"] if u["unit_id"] == "M3")
    card = report.locator("article.unit[data-unit=M3]")
    text = card.inner_text()
    assert "routing.sequence_violation" in card.locator(".codes").inner_text()
    assert m3["judgment"] in text and m3["expected"] in text and m3["observed"] in text
    assert m3["query"] in card.locator(".query").inner_text()
    failed = next(o for o in m3["rule_outcomes"] if o["status"] == "fail")
    outcomes = card.locator(".outcomes").inner_text()
    assert failed["evidence"][0]["span_id"] in outcomes and failed["evidence"][0]["excerpt"] in outcomes
    # a pass card shows an expected/observed/judgment block only to name the judgment questions no judge was
    # asked (this run has no judges): never "all rules passed"
    block = report.locator("article.unit[data-unit=MD1] dl.ejo")
    assert block.count() == 1
    text = block.inner_text()
    assert "not asked" in text and "hub.incomplete_answer" in text and "all rules passed" not in text.lower()


def test_async_card_and_lazy_trace(report, demo_run):
    a1 = next(u for u in demo_run.results["units"] if u["unit_id"] == "A1")
    assert report.locator("pre.curated").count() == 0  # no trace text in the initial DOM
    card = report.locator("article.unit[data-unit=A1]")
    facts = card.locator("dl.facts").inner_text()
    assert f"{a1['trace_ids'][0]} → {a1['trace_ids'][1]}" in facts   # each a link to the run's own trace page
    pages = card.locator("a.trace-link").evaluate_all("els => els.map(a => a.getAttribute('href'))")
    assert pages == ["traces/A1.html", "traces/A1.followup.html"]
    lat = a1["latency"]
    assert f"{lat['turn_ms']}+{lat['wait_s']:g}+{lat['followup_ms']}" in facts
    card.locator("details.trace summary").click()
    pres = card.locator("pre.curated")
    expect(pres).to_have_count(2)  # the toggle event fills the card
    assert "SKILL LOADS:" in pres.nth(0).inner_text() and "SKILL LOADS:" in pres.nth(1).inner_text()
    assert a1["trace_ids"][1] in pres.nth(1).inner_text()
    assert report.locator("pre.curated").count() == 2  # only the opened card

    closed = report.locator("details.trace:not([open]) summary")
    while closed.count():
        closed.first.click()
    ARTIFACTS.mkdir(exist_ok=True)
    report.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_large_run_is_paginated(page, run_copy):
    replicate(run_copy, 250)
    write_report(run_copy)
    page.goto((run_copy / "report.html").resolve().as_uri())
    page.click("button[data-view=cards]")
    page.wait_for_selector("article.unit")
    assert page.locator("article.unit").count() == 100
    assert page.locator("pre").count() == 0
    assert page.locator("#page-info").inner_text() == "page 1 of 3"
    page.click("#next")
    page.click("#next")
    expect(page.locator("article.unit")).to_have_count(50)
    assert page.locator("#next").is_disabled()
    assert "201–250 of 250 rows: 250 of the run's 250 units match" in page.locator("#shown").inner_text()
    page.select_option("#f-sort", "run")
    expect(page.locator("#page-info")).to_have_text("page 1 of 3")
    assert page.locator("article.unit").first.get_attribute("data-unit").endswith("-00000")
