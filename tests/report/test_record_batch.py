"""Recording a page of verdicts in one call, on recorded packets: the valid ones recorded, every
refused one named with its line, unit and all its problems; an open question never left unanswered."""
from __future__ import annotations

import json

import pytest
from obai_e2e.base.errors import VerdictInvalid
from obai_e2e.report.record import verdict_path
from obai_e2e.report.record_batch import record_batch, record_judged
from obai_e2e.report.report_md import judged_ids
from obai_e2e.run.plan import plan
from recorded import cases, clean_unit, config, packet_json, run_with_packets
from recorded import verdict_json as v

# unit of the run -> the recording whose packet it gets
PACKETS = {"MD1": ("clean", clean_unit("MD1")), "O1": ("faults", "wrong_option_math"),
           "MD5": ("faults", "ungrounded_number"), "R1": ("clean", clean_unit("R1"))}


@pytest.fixture
def run(tmp_path):
    run_dir = run_with_packets(tmp_path, {unit: packet_json(*rec) for unit, rec in PACKETS.items()})
    return run_dir, plan(run_dir, cases()).units


GOOD = {
    "MD1": v("MD1", "pass", answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"}),
    "O1": v("O1", "fail", ["specialist.options.math"], answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"}),
    "MD5": v("MD5", "needs_review", ["hub.unverified_number:987.65"],
             answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes",
                      "hub.unverified_number:987.65": "confirmed"}),
    "R1": v("R1", "pass"),
}


def lines(*verdicts) -> str:
    return "\n".join(x if isinstance(x, str) else json.dumps(x) for x in verdicts) + "\n"


def test_a_whole_page_is_recorded_in_one_call_and_again_changes_nothing(run):
    run_dir, units = run
    ok, out = record_batch(config(), run_dir, units, lines(*GOOD.values()))
    assert ok and out["status"] == "recorded" and out["refused"] == [] and out["without_verdict"] == 0
    assert out["recorded"] == "4: MD1, O1, MD5, R1"
    assert set(judged_ids(run_dir / "report.md")) == set(GOOD)
    ok, again = record_batch(config(), run_dir, units, lines(*GOOD.values()))
    assert ok and again["unchanged"] == "4: MD1, O1, MD5, R1" and again["recorded"] == "0"
    assert len(judged_ids(run_dir / "report.md")) == 4


def test_every_refused_verdict_is_named_with_its_line_unit_and_all_its_problems(run):
    run_dir, units = run
    broken = {**GOOD["O1"], "verdict": "pass", "reasons": ["specialist.options.math", "bogus.code"],
              "judgment": "two\nlines", "extra": 1, "answers": {"hub.incomplete_answer": "perhaps"}}
    text = lines(GOOD["MD1"], "not json", {"unit_id": "ZZ9"}, broken, GOOD["R1"])
    ok, out = record_batch(config(), run_dir, units, text)
    assert not ok and out["status"] == "refused_some" and out["recorded"] == "2: MD1, R1"
    refused = {r["line"]: r for r in out["refused"]}
    assert set(refused) == {2, 3, 4}
    assert refused[2]["problems"][0].startswith("/: not a JSON object")
    assert refused[3]["unit_id"] == "ZZ9" and "'ZZ9' is not a unit of this run" in refused[3]["problems"][0]
    problems = refused[4]["problems"]
    assert refused[4]["unit_id"] == "O1"
    pointers = [p.split(": ", 1)[0] for p in problems]
    # every problem of the verdict, each with its pointer: the unknown field, the line break in the
    # judgment, the answer that is no answer, the reasons a pass may not carry
    assert "/" in pointers and "/judgment" in pointers and "/answers/hub.incomplete_answer" in pointers
    assert any(p.startswith("/reasons") for p in pointers), problems
    assert not any("more problem" in p for p in problems)
    assert out["without_verdict"] == 2
    assert not verdict_path(run_dir, "O1").exists() and not verdict_path(run_dir, "MD5").exists()


def test_an_unanswered_open_question_is_refused_and_nothing_is_recorded_for_it(run):
    run_dir, units = run
    no_word = v("MD5", "needs_review", ["hub.unverified_number:987.65"], answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"})
    silent = v("MD1", "pass")
    ok, out = record_batch(config(), run_dir, units, lines(no_word, silent))
    assert not ok and out["recorded"] == "0"
    by_unit = {r["unit_id"]: r["problems"] for r in out["refused"]}
    assert by_unit["MD5"] == ["/answers/hub.unverified_number:987.65: the open question hub.unverified_number:987.65 "
                              "is unanswered: answer confirmed (no payload supports the number: keep the code) or "
                              "dismissed (a restatement or a plain derivation: drop it) (abstain when the packet "
                              "does not let you decide)"]
    assert by_unit["MD1"][0].startswith("/answers/hub.incomplete_answer: the open question hub.incomplete_answer "
                                        "is unanswered")
    assert judged_ids(run_dir / "report.md") == []


def test_an_answer_and_the_reasons_must_agree(run):
    run_dir, units = run
    kept_but_dropped = v("MD5", "pass", answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes",
                                                 "hub.unverified_number:987.65": "confirmed"})
    dropped_but_kept = v("MD1", "needs_review", ["hub.incomplete_answer"], answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"})
    wrong_kind = v("R1", "pass", answers={})
    ok, out = record_batch(config(), run_dir, units, lines(kept_but_dropped, dropped_but_kept, wrong_kind))
    by_unit = {r["unit_id"]: r["problems"] for r in out["refused"]}
    assert by_unit["MD5"] == ["/reasons: your answer 'confirmed' to hub.unverified_number:987.65 keeps its code: "
                              "keep hub.unverified_number:987.65 in /reasons (verdict needs_review)"]
    assert by_unit["MD1"] == ["/reasons: your answer 'yes' to hub.incomplete_answer drops its code: remove "
                              "hub.incomplete_answer from /reasons"]
    assert "R1" not in by_unit  # a rejection unit has no open question
    confirmed_as_yes = v("MD1", "pass", answers={"hub.incomplete_answer": "confirmed"})
    ok, out = record_batch(config(), run_dir, units, lines(confirmed_as_yes))
    assert out["refused"][0]["problems"][0].startswith(
        "/answers/hub.incomplete_answer: 'confirmed' does not answer hub.incomplete_answer")


def test_a_mechanical_failure_needs_an_override_and_a_panel_majority_is_kept(run):
    run_dir, units = run
    silent_pass = v("O1", "pass", answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"})
    ok, out = record_batch(config(), run_dir, units, lines(silent_pass))
    assert out["refused"][0]["problems"] == [
        "/override: the mechanical check found the hard failure specialist.options.math; to record pass instead, "
        "add override {\"rule\": \"specialist.options.math\", \"reason\": \"why the rule does not hold\"}"]
    overridden = {**silent_pass, "override": {"rule": "specialist.options.math", "reason": "the payload says "
                                                                                            "no upper bound"}}
    ok, out = record_batch(config(), run_dir, units, lines(overridden))
    assert ok and out["recorded"] == "1: O1"


def test_a_different_verdict_for_a_judged_unit_is_refused_in_the_batch_and_the_rest_goes_on(run):
    run_dir, units = run
    record_batch(config(), run_dir, units, lines(GOOD["MD1"]))
    other = v("MD1", "needs_review", ["hub.incomplete_answer"], answers={"hub.incomplete_answer": "no", "hub.unfaithful_answer": "yes"})
    ok, out = record_batch(config(), run_dir, units, lines(other, GOOD["R1"]))
    assert out["recorded"] == "1: R1"
    assert out["refused"][0]["problems"][0].startswith("/verdict: MD1 is already judged")


def test_one_verdict_is_refused_with_all_its_problems_in_one_message(run):
    run_dir, units = run
    unit = next(u for u in units if u.id == "MD5")
    with pytest.raises(VerdictInvalid) as exc:
        record_judged(config(), run_dir, unit, v("MD5", "pass", ["routing.nonsense"], judgment=""))
    message = str(exc.value)
    assert message.startswith("verdict /judgment: ")
    assert "/reasons" in message and "/answers/hub.incomplete_answer" in message
    assert "/answers/hub.unverified_number:987.65" in message and "more problem" not in message
