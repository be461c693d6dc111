"""The review of a run in pages, on a run directory of recorded packets (the clean run with two faults
swapped in): bounded pages, every unit once, the units that need judgment first, legends once per page."""
from __future__ import annotations

import json
import re

import pytest
from obai_e2e.config.selection import Filters
from obai_e2e.report.record_batch import record_batch
from obai_e2e.run.plan import create_run, plan
from obai_e2e.run.review import review
from recorded import cases, clean_units, config, packet_json, run_with_packets

SWAPPED = {"S4": ("faults", "zero_trades"), "MD5": ("faults", "ungrounded_number")}
HEAD = re.compile(r"^## (\S+) ", re.M)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return run_with_packets(root, {unit: packet_json(*SWAPPED.get(unit, ("clean", unit))) for unit in clean_units()})


def pages_of(run_dir, **kw) -> list[str]:
    p = plan(run_dir, cases())
    first = review(config(), p, **kw)
    total = int(re.search(r"page 1 of (\d+)", first).group(1))
    return [first] + [review(config(), p, page=n, **kw) for n in range(2, total + 1)]


def test_pages_are_bounded_and_show_every_unit_once_those_to_judge_first(run):
    pages = pages_of(run, max_chars=8000)
    assert len(pages) > 2 and all(len(page) <= 8000 for page in pages)
    shown = [uid for page in pages for uid in HEAD.findall(page)]
    assert sorted(shown) == sorted(clean_units())
    to_judge = [i for i, page in enumerate(pages) for block in page.split("\n## ")[1:] if "\nopen: " in block
                or "\nfailed or soft:" in block]
    short = [i for i, page in enumerate(pages) for block in page.split("\n## ")[1:] if "\ntrace:" not in block]
    assert to_judge and max(to_judge) <= min(short or [len(pages)])
    assert "## S4 (strategy) · rules: fail specialist.strategy.zero_trades" in "".join(pages)
    for page in pages:
        keys = set(re.findall(r"^admissible: (\w+)$", page, re.M))
        legend = set(re.findall(r"^  ([A-Z]\w*): fail one of", page, re.M))
        assert keys == legend  # each set the page's units refer to, and no other, given once


def test_text_is_the_smaller_form_recorded_units_leave_and_full_shows_one_unit_whole(tmp_path):
    run_dir, _ = create_run(config(), cases(), Filters(ids=("MD1", "R1")), root=tmp_path)
    for unit in ("MD1", "R1"):
        (run_dir / f"{unit}.json").write_text(json.dumps(packet_json("clean", unit)), encoding="utf-8")
    p = plan(run_dir, cases())
    text, data = review(config(), p), json.loads(review(config(), p, fmt="json"))
    assert [u["unit"] for u in data["units"]] == HEAD.findall(text) == ["MD1", "R1"]
    assert len(text) < len(json.dumps(data, ensure_ascii=False))  # the same page, fewer characters as text
    whole = json.loads(review(config(), p, unit_id="MD1", full=True))["units"][0]
    assert len(whole["outcomes"]) > 10 and whole["trace"].startswith("TRACE ") and whole["admissible"]["fail"]
    verdicts = [{"schema_version": 1, "unit_id": "MD1", "verdict": "pass", "judgment": "Fine.",
                 "answers": {"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"}}]
    ok, out = record_batch(config(), run_dir, p.units, "\n".join(map(json.dumps, verdicts)))
    assert ok and out["without_verdict"] == 1
    page = review(config(), plan(run_dir, cases()))
    assert HEAD.findall(page) == ["R1"] and "1 of 1 units without a verdict" in page
    ok, _ = record_batch(config(), run_dir, p.units, json.dumps({**verdicts[0], "unit_id": "R1", "answers": {}}))
    assert "every driven unit has a verdict: go on to finish the run" in review(config(), plan(run_dir, cases()))
