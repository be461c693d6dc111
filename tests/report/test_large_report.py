"""report.html of a run larger than FULL_UNITS: the units that did not pass in full, every other unit as a row."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from obai_e2e.report import html_units
from obai_e2e.report.html import render, write_report
from playwright.sync_api import expect

from .helpers import replicate

pytestmark = pytest.mark.slow

N = html_units.FULL_UNITS + 400
DATA_BLOCK = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def data_of(html: str) -> dict:
    [block] = DATA_BLOCK.findall(html)
    return json.loads(block)


def test_a_small_run_has_every_unit_in_full(run_copy):
    html = render(run_copy)
    data = data_of(html)
    assert data["units"] and all(isinstance(u, dict) for u in data["units"])
    assert "label_sets" not in data and 'id="in-full"' not in html


def test_a_large_run_has_the_units_that_did_not_pass_in_full_and_the_others_as_rows(run_copy):
    results = replicate(run_copy, N)
    html = render(run_copy)
    data = data_of(html)
    units = data["units"]
    assert len(units) == N
    entries = results["units"]
    full = [u for u in units if isinstance(u, dict)]
    rows = [u for u in units if isinstance(u, list)]
    assert [u["id"] for u in full] == [e["unit_id"] for e in entries if e["verdict"] != "pass"]
    assert [r[0] for r in rows] == [e["unit_id"] for e in entries if e["verdict"] == "pass"]
    by_id = {e["unit_id"]: e for e in entries}
    for row in rows[:50]:
        e = by_id[row[0]]
        assert row[1:4] == ["pass", e["feature"], e["reasons"]]
        assert row[4] == (e["query"] if len(e["query"]) <= 160 else e["query"][:160] + " …")
        assert data["label_sets"][row[8]] == [[k, str(v)] for k, v in sorted(e["labels"].items())]
        assert row[7] == (1 if e["latency"].get("wait_s") is not None or e.get("followup_curated_trace") else 0)
    assert f"{len(full)} of {N} units are in this page in full" in html
    # rows carry no answer, trace or rule outcome: the page is far smaller than every unit in full would be
    assert all(len(json.dumps(r)) < 600 for r in rows)


def test_the_units_in_full_stop_at_the_budget(run_copy, monkeypatch):
    monkeypatch.setattr(html_units, "DETAIL_UNITS", 25)
    results = replicate(run_copy, N)
    units = data_of(render(run_copy))["units"]
    full = [u["id"] for u in units if isinstance(u, dict)]
    assert full == [e["unit_id"] for e in results["units"] if e["verdict"] != "pass"][:25]
    monkeypatch.setattr(html_units, "DETAIL_UNITS", 10_000)
    monkeypatch.setattr(html_units, "DETAIL_BYTES", 1)  # the first unit in full spends the whole budget
    assert sum(isinstance(u, dict) for u in data_of(render(run_copy))["units"]) == 1


@pytest.mark.browser
def test_a_row_is_found_by_search_and_by_its_anchor_and_its_card_says_where_the_rest_is(page, run_copy):
    results = replicate(run_copy, N)
    passed = [e for e in results["units"] if e["verdict"] == "pass"]
    target = passed[-1]["unit_id"]
    line = next(i for i, e in enumerate(results["units"]) if e["unit_id"] == target) + 1
    source = next((run_copy / "traces").glob("*.html"))
    shutil.copy(source, run_copy / "traces" / f"{target}.html")  # its trace page, as the run would have written it
    write_report(run_copy)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((run_copy / "report.html").resolve().as_uri() + f"#unit-{target}")
    expect(page.locator(f"tr.urow.target#unit-{target}")).to_have_count(1)
    card = page.locator("tr.detail article.unit")
    expect(card.locator(".row-note")).to_contain_text(f"line {line})")
    expect(card.locator("a.trace-link")).to_have_attribute("href", f"traces/{target}.html")
    page.fill("#f-search", target)
    expect(page.locator("#shown")).to_contain_text(f"1 of the run's {N} units match")
    page.fill("#f-search", "")
    page.click("button.stat[data-verdict=fail]")
    expect(page.locator("tr.urow").first).to_have_class(re.compile("v-fail"))
    assert errors == []
