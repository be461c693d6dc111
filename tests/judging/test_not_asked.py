"""Headless honesty: a judgment question no judge was asked, or asked and decided by nobody, is named,
counted and never reported as passed.

On the stored demo run (MD1, S2, A1, O2, R1): each answered unit leaves hub.incomplete_answer and
hub.unfaithful_answer to a judge, R1 (a refusal) leaves nothing. Without a panel and without a judge
the questions are not asked: the verdict stays what the rules decide, its judgment names the
questions, and results.json, report.md, report.html, JUnit, the chat summary and --fail-on count
them. A panel that leaves a question without a majority (a judge without a reply, abstentions)
leaves it undecided: counted per question, and --fail-on not_asked fails on it too.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from jsonschema import Draft202012Validator
from markdown_it import MarkdownIt
from obai_e2e.base import schema
from obai_e2e.drive.packet_record import load_packet
from obai_e2e.judge.open_questions import not_asked, undecided
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.responses import store
from obai_e2e.judge.rubric import check_packet
from obai_e2e.judge.verdict import mechanical_verdict
from obai_e2e.report.chat_summary import chat_summary
from obai_e2e.report.ci_summary import summary_markdown
from obai_e2e.report.html import write_report
from obai_e2e.report.junit import write_junit
from obai_e2e.report.record import verdict_path
from obai_e2e.report.finalize import finalize
from obai_e2e.report.results import load_results, summarize
from obai_e2e.report.rows import unit_checker
from obai_e2e.run.fail_on import FAIL_ON, decide, parse
from obai_e2e.run.judging import judge_unit

from .helpers import make_round, reply, run_units

ANSWERED = ("MD1", "S2", "A1", "O2")
Q, F = "hub.incomplete_answer", "hub.unfaithful_answer"
BOTH = f"{Q}, {F}"


def _check(run, config, cases, unit_id):
    return check_packet(load_packet(run, unit_id), cases.by_id(unit_id), config)


def _panel(majority: str, *, decided: bool = True, trips: bool = False, faithful: bool = True) -> dict:
    """A panel's entry for one unit: completeness as given, faithfulness decided (faithful 3) unless not
    ``faithful`` (then undecided: faithful 1, unfaithful 1)."""
    votes = {majority: 3} if decided else {"complete": 1, "incomplete": 1}
    f = {"applies": True, "decided": faithful, "trips": False, "no_vote": {},
         "votes": {"faithful": 3} if faithful else {"faithful": 1, "unfaithful": 1},
         "majority": "faithful" if faithful else "abstain"}
    return {"questions": {Q: {"applies": True, "decided": decided, "trips": trips, "votes": votes,
                              "majority": majority if decided else "abstain", "no_vote": {}}, F: f},
            "panel_size": 3, "judges": ["J1", "J2", "J3"], "outcomes": {}}


def test_without_a_judge_the_question_is_named_not_passed(run, config_cases):
    config, cases = config_cases
    for unit_id in ANSWERED:
        check = _check(run, config, cases, unit_id)
        assert check.verdict == "pass" and [q["id"] for q in check.questions] == [Q, F]
        v = mechanical_verdict(check)
        assert v["verdict"] == "pass" and v["reasons"] == []
        assert "All" not in v["judgment"] and "applicable rules passed" in v["judgment"]
        assert v["judgment"].endswith(f"; not asked (no judge): {BOTH}.")
    # A unit with no question left is the one that says all its rules passed.
    r1 = mechanical_verdict(_check(run, config, cases, "R1"))
    assert re.fullmatch(r"All \d+ applicable rules passed\.", r1["judgment"])


def test_a_panel_that_decided_the_question_leaves_nothing_unasked(run, config_cases):
    config, cases = config_cases
    check = _check(run, config, cases, "MD1")
    complete = mechanical_verdict(check, _panel("complete"))
    assert complete["verdict"] == "pass" and complete["judged_by"] == "mechanical+panel"
    assert re.match(r"All \d+ applicable rules passed\. The judge panel found the answer complete \(complete 3\)\. "
                    r"The judge panel found the answer faithful to its payloads \(faithful 3\)\.", complete["judgment"])
    incomplete = mechanical_verdict(check, _panel("incomplete", trips=True))
    assert incomplete["verdict"] == "needs_review" and incomplete["reasons"] == [Q]
    assert "not asked" not in incomplete["judgment"]
    split = mechanical_verdict(check, _panel("", decided=False))
    assert split["verdict"] == "pass" and "All" not in split["judgment"]
    assert re.search(rf"applicable rules passed; undecided: {Q}\. The judge panel found the answer faithful to its "
                     rf"payloads \(faithful 3\)\. {Q} stays undecided: no majority", split["judgment"])
    assert not_asked([Q], "pass", _panel("", decided=False)) == []  # put to the panel: asked, undecided
    assert undecided([Q, F], "pass", _panel("", decided=False)) == [Q]
    unfaithful = mechanical_verdict(check, {"questions": {**_panel("complete")["questions"], F: {
        "applies": True, "decided": True, "trips": True, "votes": {"unfaithful": 2, "faithful": 1},
        "majority": "unfaithful"}}})
    assert unfaithful["verdict"] == "needs_review" and unfaithful["reasons"] == [F]
    assert unfaithful["judgment"].startswith("The judge panel found the answer unfaithful to its payloads "
                                             "(faithful 1, unfaithful 2).")


def test_undecided_is_what_a_judge_was_asked_and_nobody_decided():
    questions = [Q, F, "hub.unverified_number:42"]
    assert undecided(questions, "pass") == []  # asked of nobody: that is not_asked
    split = _panel("", decided=False, faithful=False)
    assert undecided(questions, "pass", split) == [Q, F]
    assert undecided(questions, "needs_review", split, {Q: "yes"}) == [F]  # the verdict decided one
    assert undecided(questions, "pass", split, {Q: "abstain", F: "no"}) == [Q]
    assert undecided(questions, "pass", None, {"hub.unverified_number:42": "abstain"}) == ["hub.unverified_number:42"]
    assert undecided(questions, "pass", _panel("complete")) == []
    not_applicable = {"questions": {Q: {"applies": False, "decided": None}}}
    assert undecided([Q], "pass", not_applicable) == []
    category = {"questions": {"answer_clarity": {"applies": True, "decided": False}}}
    assert undecided([Q], "pass", category, {Q: "yes"}) == ["answer_clarity"]  # a category question counts too
    assert undecided(questions, "fail", split) == [] and undecided(questions, "inconclusive", split) == []


def test_not_asked_is_what_neither_a_panel_nor_the_verdict_answered():
    questions = [Q, "hub.unverified_number:42"]
    assert not_asked(questions, "pass") == questions
    assert not_asked(questions, "needs_review", None, {Q: "abstain"}) == ["hub.unverified_number:42"]
    assert not_asked(questions, "needs_review", _panel("complete"), {"hub.unverified_number:42": "confirmed"}) == []
    assert not_asked(questions, "fail") == [] and not_asked(questions, "inconclusive") == []


def test_a_long_judgment_keeps_the_questions_it_did_not_ask(run, config_cases):
    config, cases = config_cases
    check = _check(run, config, cases, "MD1")
    check.verdict, check.reasons = "needs_review", ["routing.unexpected_specialist"]
    check.judgment = "x" * 600
    v = mechanical_verdict(check)
    assert len(v["judgment"]) <= 400 and v["judgment"].endswith(f"xx… Not asked (no judge): {BOTH}.")
    check.judgment = "hub.answer_truncated: the answer ends mid-sentence."
    assert mechanical_verdict(check)["judgment"] == (f"hub.answer_truncated: the answer ends mid-sentence. "
                                                     f"Not asked (no judge): {BOTH}.")


def _headless(run, config, cases) -> dict:
    """The stored run judged again without a panel, as `obai-e2e run` judges it, then finished."""
    for name in ("results.json", "results.units.jsonl", "diff.json", "report.md"):
        (run / name).unlink(missing_ok=True)
    units = run_units(run, cases)
    for u in units:
        verdict_path(run, u.id).unlink()
    (run / "report.md").write_text("# OBaI E2E Regression — now\n\n| ID | Feature | Verdict | Reason | Trace | Latency |"
                                   "\n|---|---|---|---|---|---|\n", encoding="utf-8")
    for u in units:
        judge_unit(config, run, u)
    return finalize(config, cases, run, units)


def test_results_reports_junit_and_summaries_count_them(run, config_cases, tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    (tmp_path / "runs").mkdir()
    config, cases = config_cases
    out = _headless(run, config, cases)
    s = out["summary"]
    assert (s["pass"], s["units_not_asked"], s["questions_not_asked"]) == (5, 4, 8)
    assert (s["units_undecided"], s["questions_undecided"]) == (0, 0)
    assert out["not_asked_line"].startswith("judgment questions not asked: 8 in 4 unit(s)")
    results = load_results(run / "results.json")
    check_unit = unit_checker()
    for u in results["units"]:
        check_unit(u, u["unit_id"])
    summary_schema = schema.load_schema("results.v1.schema.json")["properties"]["summary"]
    assert list(Draft202012Validator(summary_schema).iter_errors(s)) == []
    by_id = {u["unit_id"]: u for u in results["units"]}
    assert {k: by_id[k]["not_asked"] for k in by_id} == {**{k: [Q, F] for k in ANSWERED}, "R1": []}
    assert summarize(results["units"]) == s

    md = (run / "report.md").read_text(encoding="utf-8")
    head, _, below = md.partition("| ID |")
    # The changes first, the count on one line after them, the units in a section of their own further down.
    assert re.match(r"# .*\n\n## Changes .*\n\n- .*\n\n> \*\*8 judgment question\(s\) not asked\*\* in 4 unit\(s\)",
                    head), head
    assert "R1" not in head and not any(k in head for k in ANSWERED)
    section = below.split("## Judgment questions not asked", 1)[1]
    assert all(f"- {k}: {BOTH}" in section for k in ANSWERED) and "R1" not in section
    assert [r for r in MarkdownIt("commonmark").enable("table").parse(md) if r.type.startswith("html")] == []

    suite = ET.parse(write_junit(run)["junit_xml"]).getroot()
    assert suite.find("properties/property[@name='judgment_questions_not_asked']").get("value") == "8"
    cases_xml = {c.get("name"): c for c in suite.iter("testcase")}
    assert f"not asked (no judge: undecided, not passed): {BOTH}" in cases_xml["MD1"].find("system-out").text
    assert cases_xml["R1"].find("system-out") is None

    html = (run / "report.html").read_text(encoding="utf-8") if write_report(run, cases) else ""
    assert 'id="not-asked"' in html and "judgment questions not asked (4 units)" in html
    order = [html.index(s) for s in ('id="changes"', 'id="not-asked-note"', 'aria-label="Summary"',
                                     'id="not-asked-units"')]
    assert order == sorted(order) and "8 judgment question(s) not asked</strong> in 4 unit(s)" in html
    assert all(f"<code>{k}</code>: {BOTH}" in html.split('id="not-asked-units"')[1] for k in ANSWERED)
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)[1])
    md1 = next(u for u in data["units"] if u["id"] == "MD1")
    assert md1["not_asked"] == [Q, F] and f"not asked (no judge): {BOTH}" in md1["judgment"]

    text = chat_summary(out, None)
    assert "Judgment questions not asked: 8 in 4 unit(s)" in text
    pr = summary_markdown(run)  # the pull-request summary: the changes first there too
    assert "_judgment questions not asked: 8 in 4 unit(s)" in pr and pr.index("**Changes") < pr.index("_judgment")


def test_a_panel_that_answered_one_packet_of_four_leaves_the_rest_undecided_and_fails_the_run(
        run, config_cases, tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    (tmp_path / "runs").mkdir()
    config, cases = config_cases
    rnd = make_round(run, config, cases, calibration=False)
    for judge in ("J1", "J2", "J3"):  # every judge answered MD1's packet and no other
        store(run, "r1", judge, "m", reply(rnd, {"MD1": "complete"}, fixed=False))
    aggregate_round(run, "r1")
    out = _headless(run, config, cases)
    s = out["summary"]
    assert (s["questions_not_asked"], s["units_undecided"], s["questions_undecided"]) == (0, 3, 6)
    by_id = {u["unit_id"]: u for u in load_results(run / "results.json")["units"]}
    assert by_id["MD1"]["undecided"] == [] and by_id["S2"]["undecided"] == [Q, F]
    assert out["not_asked_line"].startswith("judgment questions undecided: 6 asked but decided by nobody in 3 unit(s)")
    assert out["judges_left_undecided"] == []  # decided for MD1: the older rule let this run pass
    assert decide(out, ("fail",)).code == 0
    d = decide(out, ("fail", "not_asked"))
    assert d.code == 3 and "6 judgment question(s) in 3 unit(s) were asked and decided by nobody" in d.why


def test_a_run_stopped_before_its_note_was_written_finishes_again_with_it(run, config_cases, tmp_path, monkeypatch):
    """A stop after results.json was written but before report.md had its note: finishing again (what the
    resume does) reads the rows back from the finished results and writes the note."""
    import obai_e2e.report.finalize as results_module

    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    (tmp_path / "runs").mkdir()
    config, cases = config_cases

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(results_module, "insert_not_asked", stopped)
        with pytest.raises(KeyboardInterrupt):
            _headless(run, config, cases)
    assert (run / "results.json").exists() and "not asked" not in (run / "report.md").read_text(encoding="utf-8")
    out = finalize(config, cases, run, run_units(run, cases))
    assert out["summary"]["questions_not_asked"] == 8
    head = (run / "report.md").read_text(encoding="utf-8").split("| ID |")[0]
    assert "**8 judgment question(s) not asked** in 4 unit(s)" in head


def test_fail_on_not_asked():
    assert "not_asked" in FAIL_ON and parse("fail,not_asked") == ("fail", "not_asked")
    summary = {"pass": 5, "fail": 0, "inconclusive": 0, "questions_not_asked": 4, "units_not_asked": 4}
    assert decide({"summary": summary}, ("fail",)).code == 0
    d = decide({"summary": summary}, ("fail", "not_asked"))
    assert d.code == 3 and d.why.startswith("--fail-on not_asked: 4 judgment question(s) in 4 unit(s)")
    assert decide({"summary": {**summary, "fail": 1}}, ("fail", "not_asked")).code == 1  # a failure comes first
    assert decide({"summary": {**summary, "questions_not_asked": 0}}, ("not_asked",)).code == 0
    split = {**summary, "questions_not_asked": 0, "questions_undecided": 2, "units_undecided": 1}
    d = decide({"summary": split}, ("not_asked",))
    assert d.code == 3 and d.why == ("--fail-on not_asked: 2 judgment question(s) in 1 unit(s) were asked and "
                                     "decided by nobody (no majority) (results.json: not_asked and undecided per unit)")
    assert decide({"summary": split}, ("fail",)).code == 0
    assert decide({"summary": summary}, ("new_fail", "not_asked"), shard="1/2").code == 3
    with pytest.raises(Exception, match="choose from fail, new_fail, regression, not_asked"):
        parse("nope")
