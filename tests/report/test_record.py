"""Recording a verdict on recorded packets: write-once, the audited repair kept, overrides checked."""
from __future__ import annotations

import json

import pytest
from obai_e2e.base.errors import VerdictInvalid, WriteOnceViolation
from obai_e2e.config.selection import Filters
from obai_e2e.report.record import record, verdict_path
from obai_e2e.report.report_md import judged_ids
from obai_e2e.run.plan import create_run, plan
from recorded import cases, config, packet_json

# unit of the run -> the recording whose packet it gets
PACKETS = {"MD1": ("clean", "MD1"), "O1": ("faults", "wrong_option_math")}


@pytest.fixture
def run(tmp_path):
    run_dir, _ = create_run(config(), cases(), Filters(ids=tuple(PACKETS)), root=tmp_path)
    for unit, (group, name) in PACKETS.items():
        (run_dir / f"{unit}.json").write_text(json.dumps(packet_json(group, name)), encoding="utf-8")
    units = {u.id: u for u in plan(run_dir, cases()).units}
    return run_dir, units


def verdict(unit: str, value: str, reasons=None, **extra) -> dict:
    out = {"schema_version": 1, "unit_id": unit, "verdict": value, "judgment": "Checked.", "judged_by": "test",
           **extra}
    if reasons is not None:
        out["reasons"] = reasons
    return out


def test_a_repaired_verdict_is_recorded_with_its_original_and_the_same_original_again_changes_nothing(run):
    run_dir, units = run
    submitted = verdict("MD1", "pass", ["hub.empty_response"])
    first = record(config(), run_dir, units["MD1"], submitted)
    assert (first["status"], first["verdict"], first["reasons"]) == ("recorded", "pass", [])
    stored = json.loads(verdict_path(run_dir, "MD1").read_text())
    assert stored["repair"] == {"rule": "non_applicable_reason:/reasons", "original": submitted}
    assert stored["mechanical"] == {"verdict": "pass", "reasons": []}
    before = verdict_path(run_dir, "MD1").read_bytes(), (run_dir / "report.md").read_bytes()
    again = record(config(), run_dir, units["MD1"], submitted)
    assert again["status"] == "unchanged" and again["repair"] == first["repair"]
    assert (verdict_path(run_dir, "MD1").read_bytes(), (run_dir / "report.md").read_bytes()) == before
    assert judged_ids(run_dir / "report.md") == ["MD1"]


def test_a_different_verdict_for_a_judged_unit_is_refused(run):
    run_dir, units = run
    record(config(), run_dir, units["MD1"], verdict("MD1", "pass"))
    with pytest.raises(WriteOnceViolation, match="MD1 is already judged"):
        record(config(), run_dir, units["MD1"], verdict("MD1", "needs_review", ["hub.incomplete_answer"]))


def test_contradicting_a_mechanical_failure_needs_an_override_and_nothing_is_written_without_it(run):
    run_dir, units = run
    with pytest.raises(VerdictInvalid, match=r"^verdict /override: .*specialist\.options\.math"):
        record(config(), run_dir, units["O1"], verdict("O1", "pass"))
    assert not verdict_path(run_dir, "O1").exists() and judged_ids(run_dir / "report.md") == []
    override = {"rule": "specialist.options.math", "reason": "the payload says 'no upper bound'"}
    done = record(config(), run_dir, units["O1"], verdict("O1", "pass", override=override))
    assert done["status"] == "recorded"
    stored = json.loads(verdict_path(run_dir, "O1").read_text())
    assert stored["override"] == override and stored["mechanical"]["reasons"] == ["specialist.options.math"]
