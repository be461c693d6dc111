"""report.html without a browser: wiring, content, escaping of the data block, determinism, --open."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from obai_e2e.base.errors import ConfigError, UsageError
from obai_e2e.report.html import render, write_report
from obai_e2e.report.html_inputs import read_detail_blocks, read_top_regressions
from obai_e2e.report.html_view import build_context, embed_json, unit_view

from .helpers import (
    ALL,
    ATTR_BREAK,
    EXPECTED,
    HOSTILE,
    SCRIPT_BREAK,
    make_hostile,
    obai_e2e,
)

pytestmark = pytest.mark.slow

DATA_BLOCK = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def data_block(html: str) -> str:
    found = DATA_BLOCK.findall(html)
    assert len(found) == 1
    return found[0]


def test_headless_run_wrote_report_and_junit(demo_run):
    """`obai-e2e run` goes through finish.after_run: report.html and results.junit.xml exist."""
    verdicts = {u["unit_id"]: u["verdict"] for u in demo_run.results["units"]}
    assert verdicts == EXPECTED
    assert demo_run.exit_code == 1  # a fail among the units
    assert [d["id"] for d in demo_run.results["disabled"]] == ["D1"]
    assert (demo_run.run_dir / "report.html").stat().st_size > 0
    assert (demo_run.run_dir / "results.junit.xml").stat().st_size > 0


def test_page_is_self_contained(demo_run):
    html = (demo_run.run_dir / "report.html").read_text(encoding="utf-8")
    outside = DATA_BLOCK.sub("", html)
    assert not re.search(r"\b(src|href|srcset|action|formaction)\s*=", outside, re.I)
    assert "<link" not in outside and "@import" not in outside and "url(" not in outside
    assert "http://" not in outside and "https://" not in outside
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src &#39;none&#39;" in csp and "script-src &#39;sha256-" in csp
    assert html.count("<script") == 2  # the data block and the page script, nothing else


def test_summary_and_cards_data(demo_run):
    ctx = build_context(demo_run.run_dir)
    counts = {c["verdict"]: c["n"] for c in ctx["counts"]}
    assert counts == {"pass": 2, "fail": 1, "needs_review": 2, "inconclusive": 1}
    assert ctx["total"] == 6
    assert ctx["run"]["target_name"] == "obai-demo" and ctx["run"]["target_version"].startswith("obai-demo")
    assert ctx["run"]["git_commit"] and ctx["run"]["run_id"] == demo_run.results["run"]["run_id"]
    assert [d["id"] for d in ctx["disabled"]] == ["D1"]
    # Finishing scores every run: the Loss section shows the suite (no baseline, so no regressions table).
    assert ctx["loss"]["suite"] is not None and ctx["loss"]["regressions"] is None
    units = {u["id"]: u for u in ctx["data"]["units"]}
    a1 = units["A1"]
    assert a1["async"] and " → " in a1["traces"] and re.fullmatch(r"\d+\+\d+(\.\d+)?\+\d+", a1["latency"])
    assert a1["trace"] and a1["followup_trace"]
    # A pass shows no expected/observed/judgment, except a pass whose judgment question no judge was asked:
    # its judgment names the question.
    if a1.get("not_asked"):
        assert "not asked" in a1["judgment"] and all(q in a1["judgment"] for q in a1["not_asked"])
    else:
        assert "expected" not in a1
    m3 = units["M3"]
    assert m3["reasons"] == ["routing.sequence_violation"]
    assert m3["judgment"].startswith("routing.sequence_violation")
    assert m3["outcomes"][0]["evidence"][0]["span"]  # evidence carries the span id
    assert units["M5"]["description"] and units["M5"]["known_needs_review"] == ["routing.unexpected_specialist"]
    assert units["R1"]["traces"] == "—" and units["R1"]["judgment"].startswith("trace_not_found")


def test_detail_blocks_come_from_report_md(demo_run):
    blocks = read_detail_blocks(demo_run.run_dir / "report.md")
    assert sorted(blocks) == ["F1", "M3", "M5", "R1"]  # every unit that did not pass, inconclusive ones too
    by_id = {u["unit_id"]: u for u in demo_run.results["units"]}
    for unit_id, block in blocks.items():
        assert block.verdict == by_id[unit_id]["verdict"]
        assert block.judgment == by_id[unit_id]["judgment"]
        assert block.expected == by_id[unit_id]["expected"]


def test_block_wins_over_results_for_non_pass(demo_run):
    entry = next(u for u in demo_run.results["units"] if u["unit_id"] == "M3")
    from obai_e2e.report.html_inputs import DetailBlock

    view = unit_view(entry, DetailBlock("M3", "fail", "q", "E", "O", "J"), None)
    assert (view["expected"], view["observed"], view["judgment"]) == ("E", "O", "J")
    assert unit_view(entry, None, None)["judgment"] == entry["judgment"]


def test_render_is_deterministic_and_idempotent(run_copy, tmp_path):
    first = write_report(run_copy)
    path = Path(first["report_html"])
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    assert write_report(run_copy) == first
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime  # nothing rewritten
    other = tmp_path / "elsewhere"
    shutil.copytree(run_copy, other)
    (other / "report.html").unlink()
    assert render(other).encode("utf-8") == before  # the path of the run dir is not in the page
    assert first["bytes"] == len(before)


def test_data_block_cannot_be_closed_by_hostile_text(run_copy):
    make_hostile(run_copy)
    html = render(run_copy)
    block = data_block(html)
    assert "<" not in block and ">" not in block and "&" not in block
    assert "\u2028" not in block and "\u2029" not in block
    data = json.loads(block)
    assert any(u["query"].startswith(ALL) for u in data["units"])
    assert html.count("</script>") == 2
    outside = DATA_BLOCK.sub("", html)
    for text in HOSTILE:
        assert text not in outside  # server-rendered text is escaped wherever it shows
    assert "&lt;/script&gt;&lt;img src=x onerror=window.__xss=1&gt;" in outside  # e.g. the target version
    # The only SVG is the page's own charts; no hostile text opened an element.
    assert outside.count("<svg") == outside.count('<svg class="chart" ')
    assert "<img" not in outside and "onload=" not in outside.replace("onload=window.__xss", "")


def test_embed_json_escapes_markup_and_reveals_invisible_characters():
    text = embed_json({"a": "x\u2028y\u202ez</script><!--&"})
    assert str(text) == ('{"a":"x\\u003cU+2028\\u003ey\\u003cU+202E\\u003ez\\u003c/script\\u003e'
                         '\\u003c!--\\u0026"}')
    assert json.loads(str(text)) == {"a": "x<U+2028>y<U+202E>z</script><!--&"}


def test_loss_section(run_copy):
    (run_copy / "suite.json").write_text(json.dumps({
        "catalog_version": "v1", "mode": "A", "provenance": "synthetic", "mde": 0.05, "suite_score": 0.0731,
        "completion_rate": 0.95,
        "partitions": [
            {"labels": {"intent": "price_lookup"}, "weight": 2, "n": 600, "n_min": 576, "loss": 0.05,
             "stddev_between": 0.2, "se": 0.008, "stddev_within": 0.0, "coverage": 1.0, "status": "scored",
             "by_category": {"routing": 0.03, "grounding": {"loss": 0.02, "n": 600, "status": "scored"}}},
            {"labels": {"intent": "backtest"}, "weight": 1, "n": 3, "n_min": 576, "loss": 0.3,
             "stddev_between": 0.1, "se": 0.06, "stddev_within": 0.01, "coverage": 0.0, "status": "unterbelegt",
             "by_category": {"routing": 0.3}},
        ]}), encoding="utf-8")
    (run_copy / "TOP-REGRESSIONS.md").write_text(
        "# Top regressions\n\n| partition | kategorie | delta | ci_low | ci_high | n | run_id | log_zitat |\n"
        "|---|---|---|---|---|---|---|---|\n", encoding="utf-8")
    html = render(run_copy)
    assert 'id="loss"' in html and "0.0731" in html and "95.0 %" in html
    assert html.count("⚠ under-populated") == 1 and 'class="thin"' in html and "unterbelegt" not in html
    assert "grounding: loss 0.02" in html and "routing: 0.03" in html
    assert 'id="no-regression"' in html and "No provable loss regression." in html

    # comparison.json as score-loss writes it: how many cells could be compared.
    (run_copy / "comparison.json").write_text(json.dumps(
        {"k": 14, "baseline_run_id": "2026-11-29/120000", "cells_not_compared": 3}), encoding="utf-8")
    html = render(run_copy)
    assert "No provable loss regression among 14 compared cells (baseline 2026-11-29/120000)." in html
    (run_copy / "comparison.json").write_text(json.dumps(
        {"k": 0, "baseline_run_id": "2026-11-29/120000", "cells_not_compared": 16}), encoding="utf-8")
    html = render(run_copy)
    # No claim either way, and nothing that reads as contradicting the unit verdicts.
    assert "The loss layer compared no cell with the baseline" in html and "unit verdicts and changes above stand" in html
    assert 'class="warn" id="no-regression"' not in html
    (run_copy / "comparison.json").unlink()

    (run_copy / "TOP-REGRESSIONS.md").write_text(
        "| partition | kategorie | delta | ci_low | ci_high | n | run_id | log_zitat |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| intent=backtest | routing | 0.31 | 0.12 | 0.50 | 40 | 2026-11-29/120000 "
        "| M3.json: specialists \\| reordered |\n",
        encoding="utf-8")
    rows = read_top_regressions(run_copy / "TOP-REGRESSIONS.md")
    # a file with the seed's German column names is read under the English ones
    assert rows == [{"partition": "intent=backtest", "category": "routing", "delta": "0.31", "ci_low": "0.12",
                     "ci_high": "0.50", "n": "40", "run_id": "2026-11-29/120000",
                     "citation": "M3.json: specialists | reordered"}]
    html = render(run_copy)
    assert "no-regression" not in html and "M3.json: specialists | reordered" in html

    (run_copy / "suite.json").write_text("{not json", encoding="utf-8")
    assert "suite.json is not valid JSON" in render(run_copy)  # reported in the page, not a crash


def test_suite_score_not_reported(run_copy):
    (run_copy / "suite.json").write_text(json.dumps({
        "catalog_version": "v1", "mode": "A", "provenance": "synthetic", "mde": 0.05, "suite_score": None,
        "suite_status": "suppressed", "completion_rate": 0.5, "partitions": []}), encoding="utf-8")
    html = render(run_copy)
    assert "not reported (suppressed)" in html and "No baseline comparison in this run" in html


def test_missing_or_bad_inputs_are_clear_errors(tmp_path, run_copy):
    with pytest.raises(UsageError, match="does not exist"):
        write_report(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="results file not found"):
        write_report(empty)
    results = json.loads((run_copy / "results.json").read_text())
    results["schema_version"] = 99
    (run_copy / "results.json").write_text(json.dumps(results))
    with pytest.raises(ConfigError, match="schema version 99"):
        write_report(run_copy)


def test_cli_render_report_and_errors(run_copy, tmp_path):
    done = obai_e2e("render-report", "--run-dir", str(run_copy))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == {"status": "rendered", "report_html": str(run_copy / "report.html"),
                   "bytes": (run_copy / "report.html").stat().st_size, "trace_pages": 0}
    # Trace pages lost from a copied run come back from its snapshots, and report.html links them again.
    pages = sorted((run_copy / "traces").glob("*.html"))
    assert pages and all(f'"traces/{p.name}"' in (run_copy / "report.html").read_text() for p in pages)
    kept = {p.name: p.read_bytes() for p in pages}
    for p in pages:
        p.unlink()
    done = obai_e2e("render-report", "--run-dir", str(run_copy))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["trace_pages"] == len(kept)
    assert {p.name: p.read_bytes() for p in (run_copy / "traces").glob("*.html")} == kept
    assert all(f'"traces/{name}"' in (run_copy / "report.html").read_text() for name in kept)
    done = obai_e2e("render-report", "--run-dir", str(tmp_path / "missing"))
    assert done.returncode == 2 and json.loads(done.stdout)["status"] == "error"
    assert "does not exist" in done.stderr


def _fake_browser(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "opened.txt"
    script = tmp_path / "fake-browser"
    script.write_text(f"#!/bin/sh\necho \"$1\" >> '{marker}'\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, marker


def test_open_only_with_the_flag(run_copy, tmp_path):
    script, marker = _fake_browser(tmp_path)
    env = {**os.environ, "BROWSER": str(script)}
    done = obai_e2e("render-report", "--run-dir", str(run_copy), env=env)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "opened" not in json.loads(done.stdout)

    done = obai_e2e("render-report", "--run-dir", str(run_copy), "--open", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["opened"] is True
    assert marker.read_text().strip() == (run_copy / "report.html").resolve().as_uri()


def test_finalize_opens_only_with_the_flag(demo_run, run_copy, tmp_path):
    """`obai-e2e finalize` on a finished run: junit + html through the hook; --open honoured."""
    script, marker = _fake_browser(tmp_path)
    env = {**demo_run.env, "BROWSER": str(script)}
    env.pop("OBAI_DEMO_FAULTS")
    done = obai_e2e("finalize", "--run-dir", str(run_copy), env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert Path(out["junit_xml"]).exists() and Path(out["report_html"]).exists()
    assert not marker.exists()
    done = obai_e2e("finalize", "--run-dir", str(run_copy), "--open", env=env)
    assert done.returncode == 0, done.stderr
    assert marker.exists() and json.loads(done.stdout)["opened"] is True


def test_hostile_values_in_context_are_plain_strings(run_copy):
    make_hostile(run_copy)
    ctx = build_context(run_copy)
    assert ctx["run"]["target_name"] == ATTR_BREAK
    assert ctx["disabled"][0]["reason"].startswith("reason ")
    assert ctx["data"]["units"][0]["panel"]  # judge panel summarised
    assert any(SCRIPT_BREAK in u["reasons"] for u in ctx["data"]["units"])


def test_judge_panel_summary():
    from obai_e2e.report.html_view import panel_summary

    panel = {"round": "r1", "panel_size": 3, "judges": ["j1", "j2", "j3"],
             "questions": {"hub.incomplete_answer": {
                 "applies": True, "decided": True, "majority": "complete", "trips": False,
                 "votes": {"complete": 2, "incomplete": 1},
                 "choices": {"j1": "complete", "j2": "complete", "j3": "incomplete"},
                 "rationale": [{"judge": "j3", "text": "misses the P/E"}]},
                 "answer_quality": {"applies": False}}}
    pairs = dict(panel_summary(panel))
    assert pairs["panel"] == "round r1, 3 of 3 judges answered"
    text = pairs["hub.incomplete_answer"]
    assert text.startswith("majority: complete; votes complete: 2, incomplete: 1; j1 → complete")
    assert text.endswith("j3: misses the P/E")
    assert pairs["answer_quality"] == "not applicable"
    models = {"j1": "claude-sonnet-4-5", "j2": "gpt-4.1", "j3": "llama3.3:70b"}
    assert dict(panel_summary({**panel, "models": models}))["panel"] == \
        "round r1, 3 of 3 judges answered: j1 (claude-sonnet-4-5), j2 (gpt-4.1), j3 (llama3.3:70b)"
    assert panel_summary({"x": [1] * 500})[0][1].endswith(" …")
    assert panel_summary(None) == []


def test_the_run_panel_in_one_line_each():
    from obai_e2e.report.html_view import judges_view

    view = judges_view({"round": "r1", "judges": [
        {"name": "claude", "model": "claude-sonnet-4-5", "family": "claude", "answered": True},
        {"name": "gpt", "model": "gpt-4.1", "family": "gpt", "answered": False}],
        "tokens": {"total": 18527}, "cost": "0.0401", "currency": "USD",
        "agreement": {"items": 8, "percent_agreement": 0.875, "fleiss_kappa": 0.6129}, "undecided": ["F2:q"]})
    assert view == {"round": "r1", "who": "claude (claude-sonnet-4-5, claude); gpt (gpt-4.1, gpt) — no answer",
                    "agreement": "0.88 (κ 0.61, 8 items); 1 question(s) without a majority (undecided)",
                    "spent": "18,527 tokens, 0.0401 USD", "budget": "—", "calibration": [],
                    "warning": "Judge panel (round r1): 1 of 2 judges answered; 1 question undecided.",
                    "details": ["gpt (gpt-4.1): failed — no answer"]}
    assert judges_view(None) is None


def test_a_panel_without_answers_warns_with_each_reason_and_the_budget():
    from obai_e2e.report.html_view import judges_view

    view = judges_view({
        "round": "r2", "panel_size": 3, "answered": 0, "complete": False, "tokens": {"total": 0}, "cost": "0",
        "currency": "USD", "agreement": None, "undecided": ["F2:hub.incomplete_answer", "MD1:hub.incomplete_answer"],
        "left_undecided": ["hub.incomplete_answer"],
        "judges": [{"name": "claude", "model": "c", "answered": False, "outcome": "failed",
                    "reason": "HTTP 401 authentication_error: invalid x-api-key"},
                   {"name": "gpt", "model": "g", "answered": False, "outcome": "refused",
                    "reason": "the answer is not valid JSON (not valid JSON: Expecting value at line 1 column 1)"},
                   {"name": "llama", "model": "l", "answered": False, "outcome": "failed",
                    "reason": "not asked: the budget was reached (token budget: ...)"}],
        "budget": {"max_tokens": 20000, "max_cost": None, "currency": "USD", "spent_tokens": 18470,
                   "spent_cost": "0", "charged_attempts": 1, "charged_tokens": 18470, "charged_cost": "0",
                   "stopped": "token budget: 18470 spent and 0 reserved of 20000"}})
    assert view["warning"] == ("Judge panel (round r2): 0 of 3 judges answered; decided for no unit: "
                               "hub.incomplete_answer — the run is inconclusive.")
    assert view["details"][:3] == ["claude (c): failed — HTTP 401 authentication_error: invalid x-api-key",
                                    "gpt (g): refused — the answer is not valid JSON (not valid JSON: Expecting "
                                    "value at line 1 column 1)",
                                    "llama (l): failed — not asked: the budget was reached (token budget: ...)"]
    assert view["budget"] == view["details"][3] == (
        "Budget: 18,470 tokens of 20,000, 0 USD spent (1 timed-out or cut-off attempt(s) counted at their "
        "reservation, 18,470 tokens); stopped: token budget: 18470 spent and 0 reserved of 20000 — the questions "
        "it left unasked stay undecided.")
    assert "— refused" in view["who"] and "— failed" in view["who"]
