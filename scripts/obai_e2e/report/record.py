"""Recording a verdict: ``<unit>.verdict.json`` once, then the report.md row and block.

Idempotent: the same verdict again changes nothing; a verdict whose file exists but whose
row is missing (a kill between the two writes) gets its row now; a different verdict
for a judged unit is refused.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..base.errors import UsageError, WriteOnceViolation
from ..base.fsutil import dumps_json, write_once
from ..base.mdtable import Md, cell, row
from ..config.cases import Case
from ..config.target import TargetConfig
from ..config.units import Unit, check_unit_id
from ..drive.packet_record import Packet, load_packet
from ..drive.trace_snapshot import snapshot_path
from ..judge.panel.aggregate import panel_for_unit
from ..judge.rubric import CheckResult, check_packet
from ..judge.dropped import check_dropped
from ..judge.verdict import Verdict, check_override, check_panel, validate
from .report_md import append_entry, detail_block, judged_ids
from .trace_pages import page_name

VERDICT_SUFFIX = ".verdict.json"


def verdict_path(run_dir: Path, unit_id: str) -> Path:
    return Path(run_dir) / f"{check_unit_id(unit_id)}{VERDICT_SUFFIX}"


def load_verdict(run_dir: Path, unit_id: str) -> Verdict | None:
    return Verdict.load(verdict_path(run_dir, unit_id))


_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def _trace_ref(trace_id: str | None, url: str | None) -> str:
    """A trace id, as a Markdown link to its page when there is one (ids of odd shape stay plain, escaped text)."""
    if not trace_id:
        return "—"
    if url and _SAFE_ID.match(trace_id) and not re.search(r"[\s()<>|`\\\[\]]", url):
        return f"[{trace_id}]({url})"
    return cell(trace_id)


def trace_cell(packet: Packet, run_dir: Path | None = None) -> Md:
    """The Trace cell of report.md, as Markdown (links built here from checked parts): each trace id linked
    to the run's own page of it (written when the run is finished, from the trace the unit kept), else to
    the backend's page."""
    kept = run_dir is not None and snapshot_path(run_dir, packet.unit_id).exists()

    def link(role: str, block) -> str:
        if block is None:
            return "—"
        if kept and block.trace_id:
            return _trace_ref(block.trace_id, page_name(packet.unit_id, role))
        url = block.url if block.url and block.url.startswith(("http://", "https://")) else None
        return _trace_ref(block.trace_id, url)

    first = link("initial", packet.trace)
    follow = packet.followup.trace if packet.followup else None
    if packet.followup is not None or (packet.async_job and follow and follow.trace_id):
        return Md(f"{first} → {link('followup', follow)}")
    return Md(first)


def latency_cell(packet: Packet) -> str:
    turn_ms = packet.turn.wall_ms
    if packet.followup is not None:
        wait = packet.async_job.wait_s if packet.async_job else 0
        return f"{turn_ms}+{wait:g}+{packet.followup.turn.wall_ms}"
    return "" if turn_ms is None else str(turn_ms)


def build_record(value: dict, accepted_repair: dict | None, mechanical: CheckResult, case: Case,
                 panel: dict | None = None) -> Verdict:
    rec = Verdict.from_json(value)
    if "expected" not in value:
        rec.expected = mechanical.expected[:500]
    if "observed" not in value:
        rec.observed = mechanical.observed[:500]
    rec.case_id = case.id
    rec.feature = case.feature
    rec.mechanical = {"verdict": mechanical.verdict, "reasons": list(mechanical.reasons)}
    rec.repair = accepted_repair
    rec.judge_panel = panel
    return rec


SUBMITTED_FIELDS = ("schema_version", "unit_id", "verdict", "reasons", "expected", "observed", "judgment",
                    "judged_by", "answers", "override", "dropped")


def _same_submission(old: Verdict, new: Verdict, submitted: dict) -> bool:
    if old.repair and old.repair.get("original") == submitted:
        return True
    return all(getattr(old, k) == getattr(new, k) for k in SUBMITTED_FIELDS)


def record(config: TargetConfig, run_dir: Path, unit: Unit, submitted: dict,
           judged: set[str] | None = None, *, packet: Packet | None = None,
           mechanical: CheckResult | None = None) -> dict:
    """Validate and record ``submitted`` for ``unit``; returns a status report.

    A caller that has the unit's packet and its mechanical check passes them, so that
    neither is read or computed twice.
    """
    run_dir = Path(run_dir)
    if packet is None:
        packet = load_packet(run_dir, unit.id)
    if packet is None:
        raise UsageError(f"no packet for {unit.id} in {run_dir}: drive it first (run_one.py --id {unit.id} --run-dir ...)")
    if mechanical is None:
        mechanical = check_packet(packet, unit.case, config)
    accepted = validate(submitted, unit.case, config, unit.id)
    mechanical_json = mechanical.to_json()
    check_override(accepted.value, mechanical_json)
    check_dropped(accepted.value, mechanical_json)
    panel = panel_for_unit(run_dir, unit.id)
    check_panel(accepted.value, panel)
    rec = build_record(accepted.value, accepted.repair, mechanical, unit.case, panel)
    path = verdict_path(run_dir, unit.id)
    wrote = False
    old = load_verdict(run_dir, unit.id)
    if old is not None:
        if not _same_submission(old, rec, submitted):
            raise WriteOnceViolation(
                f"{unit.id} is already judged ({old.verdict} {old.reasons or ''}) in {path}; "
                "a different verdict is refused (start a new run to judge again)")
        rec = old
    else:
        wrote = write_once(path, dumps_json(rec.to_json()))
    appended = ensure_row(run_dir, unit, rec, packet, judged)
    return status_of(rec, path, wrote or appended, appended)


def record_harness_error(run_dir: Path, unit: Unit, message: str, judged: set[str] | None = None) -> dict:
    """Record ``unit`` as inconclusive/harness_error because its own verdict could not be recorded."""
    run_dir = Path(run_dir)
    try:
        packet = load_packet(run_dir, unit.id)
    except Exception:  # noqa: BLE001 - an unreadable packet is what is being recorded
        packet = None
    packet = packet or Packet(unit_id=unit.id, case_id=unit.case.id, run_id="")
    message = " ".join(str(message).split())[:300]
    path = verdict_path(run_dir, unit.id)
    rec = load_verdict(run_dir, unit.id)  # written just before the failure: keep it
    wrote = False
    if rec is None:
        rec = Verdict(unit_id=unit.id, verdict="inconclusive", reasons=["harness_error"],
                      judgment=f"harness_error: the verdict of this unit could not be recorded ({message})"[:400],
                      judged_by="mechanical", case_id=unit.case.id, feature=unit.case.feature)
        wrote = write_once(path, dumps_json(rec.to_json()))
    appended = ensure_row(run_dir, unit, rec, packet, judged)
    return status_of(rec, path, wrote or appended, appended)


def status_of(rec: Verdict, path: Path, changed: bool, appended: bool) -> dict:
    return {"status": "recorded" if changed else "unchanged", "unit_id": rec.unit_id,
            "verdict": rec.verdict, "reasons": rec.reasons, "judgment": rec.judgment, "verdict_file": str(path),
            "row_appended": appended, "repair": rec.repair}


def ensure_row(run_dir: Path, unit: Unit, rec: Verdict, packet: Packet, judged: set[str] | None = None) -> bool:
    """Append the report row (and block) for a recorded verdict unless the row is there.

    ``judged`` — the ids with a row, kept by a caller that records many units — spares
    parsing report.md once per unit, which would make a run quadratic in its size.
    """
    if judged is None:
        judged = set(judged_ids(Path(run_dir) / "report.md"))
    if unit.id in judged:
        return False
    block = None
    if rec.verdict in ("fail", "needs_review", "inconclusive"):
        block = detail_block(unit.id, rec.verdict, packet.query or unit.case.query,
                             rec.expected, rec.observed, rec.judgment)
    append_entry(Path(run_dir) / "report.md",
                 row([unit.id, unit.case.feature, rec.verdict, ", ".join(rec.reasons), trace_cell(packet, run_dir),
                      latency_cell(packet)]), block)
    judged.add(unit.id)
    return True
