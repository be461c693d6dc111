"""What a judge's verdict must say about the codes it leaves out, on recorded packets.

Dropping a soft code the rules tripped needs a reason (``dropped``, or ``dismissed`` for a number),
as an override does for a hard one; ``abstain`` leaves a code as the rules left it (a question the
panel decided: tests/judging/test_settled_answers.py).
"""
from __future__ import annotations

import json

import pytest
from obai_e2e.base.errors import VerdictInvalid
from obai_e2e.judge.verdict import validate
from obai_e2e.report.record import load_verdict, record
from obai_e2e.report.html_view import unit_view
from obai_e2e.report.record_batch import record_batch
from obai_e2e.report.results import unit_result
from obai_e2e.rundir.meta import load_run
from obai_e2e.run.plan import plan
from recorded import cases, clean_unit, config, packet_json, run_with_packets
from recorded import verdict_json as v

# unit of the run -> the recording whose packet it gets
PACKETS = {"MD4": ("faults", "extra_specialist"), "MD5": ("faults", "ungrounded_number"),
           "MD1": ("clean", clean_unit("MD1"))}
EXTRA = "routing.unexpected_specialist"
NUMBER = "hub.unverified_number:987.65"
Q = "hub.incomplete_answer"
F = "hub.unfaithful_answer"  # asked of every answer with payloads, as Q is


@pytest.fixture
def run(tmp_path):
    run_dir = run_with_packets(tmp_path, {unit: packet_json(*rec) for unit, rec in PACKETS.items()})
    return run_dir, plan(run_dir, cases()).units


def problems(run, *verdicts) -> dict[str, list[str]]:
    run_dir, units = run
    _, out = record_batch(config(), run_dir, units, "\n".join(json.dumps(x) for x in verdicts) + "\n")
    return {r["unit_id"]: r["problems"] for r in out["refused"]}


def test_a_soft_code_left_out_without_a_reason_is_refused(run):
    found = problems(run, v("MD4", "pass", answers={Q: "yes", F: "yes"}))
    assert found["MD4"] == [f'/reasons: the mechanical check tripped the soft code {EXTRA}; keep it in /reasons, or '
                            f'leave it out with a reason: "dropped": {{"{EXTRA}": "why it does not hold"}}']


def test_a_soft_code_dropped_with_a_reason_is_recorded_with_it(run):
    run_dir, units = run
    why = "the case allows a second specialist for this query; the extra call is the expected lookup"
    assert problems(run, v("MD4", "pass", answers={Q: "yes", F: "yes"}, dropped={EXTRA: why})) == {}
    rec = load_verdict(run_dir, "MD4")
    assert rec.verdict == "pass" and rec.dropped == {EXTRA: why}
    entry = unit_result(config(), run_dir, next(u for u in units if u.id == "MD4"), load_run(run_dir))
    assert entry.to_json()["dropped"] == {EXTRA: why}
    assert unit_view(entry.to_json(), None, None)["dropped"] == f"{EXTRA}: {why}"  # report.html's unit facts
    assert "dropped" not in unit_result(config(), run_dir, next(u for u in units if u.id == "MD1"),
                                        load_run(run_dir)).to_json()


@pytest.mark.parametrize("dropped,message", [
    ({EXTRA: "short"}, "/dropped/routing.unexpected_specialist: 'short' is too short"),
    ({EXTRA: "the case allows the extra call", "hub.answer_truncated": "the answer was complete, nothing cut"},
     "/dropped/hub.answer_truncated: hub.answer_truncated cannot be dropped: the mechanical check did not trip it "
     f"(it tripped: {EXTRA})"),
])
def test_dropped_names_a_tripped_code_with_a_real_reason(run, dropped, message):
    found = problems(run, v("MD4", "pass", answers={Q: "yes", F: "yes"}, dropped=dropped))
    assert any(p.startswith(message) for p in found["MD4"]), found


def test_a_code_kept_and_dropped_at_once_is_refused(run):
    run_dir, units = run
    unit = next(u for u in units if u.id == "MD4")
    with pytest.raises(VerdictInvalid, match="cannot be dropped: it is still in /reasons"):
        record(config(), run_dir, unit, v("MD4", "needs_review", [EXTRA], answers={Q: "yes", F: "yes"},
                                          dropped={EXTRA: "kept and dropped in one verdict"}))


def test_a_dismissed_number_needs_no_other_reason(run):
    assert problems(run, v("MD5", "pass", answers={Q: "yes", F: "yes", NUMBER: "dismissed"})) == {}


def test_abstain_leaves_the_code_as_the_rules_left_it(run):
    found = problems(run, v("MD5", "pass", answers={Q: "yes", F: "yes", NUMBER: "abstain"}),
                     v("MD1", "needs_review", [Q], answers={Q: "abstain", F: "yes"}))
    assert found["MD5"] == [f"/reasons: abstain leaves {NUMBER} as the rules left it: keep it in /reasons (verdict "
                            "needs_review), or answer dismissed if the number is a restatement"]
    assert found["MD1"] == [f"/reasons: abstain does not add {Q}: remove it from /reasons, or answer no if the "
                            "answer does fail the question"]
    assert problems(run, v("MD5", "needs_review", [NUMBER], answers={Q: "abstain", F: "yes", NUMBER: "abstain"}),
                    v("MD1", "pass", answers={Q: "abstain", F: "abstain"})) == {}


def test_the_schema_admits_dropped_only_as_code_to_one_line_reason():
    case = cases().by_id("MD4")
    ok = v("MD4", "pass", dropped={EXTRA: "the case allows the extra call"})
    assert validate(ok, case, config(), "MD4").value == ok
    with pytest.raises(VerdictInvalid, match="/dropped"):
        validate(v("MD4", "pass", dropped={EXTRA: "two\nlines of reason"}), case, config(), "MD4")
