"""A question the blind panel decided needs no answer in a verdict; an answer given must agree with the majority.

On the stored demo run with a real round of synthetic judge replies (MD1 complete by 3, O2 incomplete by 3).
"""
from __future__ import annotations

from obai_e2e.drive.packet_record import load_packet
from obai_e2e.judge.panel import panel_for_unit
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.responses import store
from obai_e2e.judge.rubric import check_packet
from obai_e2e.judge.submission import problems

from .helpers import make_round, reply, run_units

Q = "hub.incomplete_answer"
CHOICES = {"MD1": "complete", "O2": "incomplete"}


def _found(run, config, cases, unit_id: str, verdict: dict) -> list[str]:
    unit = next(u for u in run_units(run, cases) if u.id == unit_id)
    check = check_packet(load_packet(run, unit_id), unit.case, config)
    return [str(p) for p in problems(verdict, unit, config, check, panel_for_unit(run, unit_id))]


def v(unit: str, verdict: str, reasons=(), **extra) -> dict:
    return {"schema_version": 1, "unit_id": unit, "verdict": verdict, "reasons": list(reasons),
            "judgment": "Checked against the trace and the panel.", "judged_by": "claude", **extra}


def test_settled_questions_need_no_answer_and_an_answer_must_agree(run, config_cases):
    config, cases = config_cases
    rnd = make_round(run, config, cases)
    for judge in ("J1", "J2", "J3"):
        store(run, "r1", judge, "model", reply(rnd, CHOICES))
    aggregate_round(run, "r1")
    assert _found(run, config, cases, "MD1", v("MD1", "pass")) == []
    assert _found(run, config, cases, "MD1", v("MD1", "pass", answers={Q: "yes"})) == []
    assert _found(run, config, cases, "MD1", v("MD1", "pass", answers={Q: "no"})) == [
        f"/answers/{Q}: the judge panel decided {Q} (complete): leave it out of /answers, or answer 'yes' as its "
        "majority says"]
    assert _found(run, config, cases, "O2", v("O2", "needs_review", [Q])) == []
    assert _found(run, config, cases, "O2", v("O2", "needs_review", [Q], answers={Q: "abstain"})) == [
        f"/answers/{Q}: the judge panel decided {Q} (incomplete): leave it out of /answers, or answer 'no' as its "
        "majority says"]
    # An open question stays open: S2 had no vote, so its verdict must answer it.
    assert _found(run, config, cases, "S2", v("S2", "pass"))[0].startswith(f"/answers/{Q}: the open question")
