"""Recording a verdict: ``<unit>.verdict.json`` once, then the report.md row and block.

Idempotent: the same verdict again changes nothing; a verdict whose file exists but whose
row is missing (a kill between the two writes) gets its row now; a different verdict
for a judged unit is refused.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..base.errors import UsageError, WriteOnceViolation
from ..base.fsutil import dumps_json, write_once
from ..judge.panel.aggregate import panel_for_unit
from ..drive.packet import load_packet
from .report_md import append_entry, detail_block, judged_ids, row
from ..judge.rubric import check_packet
from ..rundir.layout import load_run
from ..config.units import check_unit_id, resolve_unit
from ..judge.verdict import check_override, check_panel, validate

VERDICT_SUFFIX = ".verdict.json"


def verdict_path(run_dir: Path, unit_id: str) -> Path:
    return Path(run_dir) / f"{check_unit_id(unit_id)}{VERDICT_SUFFIX}"


def load_verdict(run_dir: Path, unit_id: str) -> dict | None:
    path = verdict_path(run_dir, unit_id)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def trace_cell(packet: dict) -> str:
    first = (packet.get("trace") or {}).get("trace_id")
    follow = ((packet.get("followup") or {}).get("trace") or {}).get("trace_id")
    if packet.get("followup") is not None or (packet.get("async") and follow):
        return f"{first or '—'} → {follow or '—'}"
    return first or "—"


def latency_cell(packet: dict) -> str:
    turn_ms = (packet.get("turn") or {}).get("wall_ms")
    follow = packet.get("followup")
    if follow is not None:
        wait = (packet.get("async") or {}).get("wait_s", 0)
        return f"{turn_ms}+{wait:g}+{follow['turn']['wall_ms']}"
    return "" if turn_ms is None else str(turn_ms)


def reason_cell(record: dict) -> str:
    return ", ".join(record.get("reasons") or [])


def build_record(value: dict, accepted_repair: dict | None, mechanical, case, packet: dict,
                 panel: dict | None = None) -> dict:
    rec = dict(value)
    rec.setdefault("reasons", [])
    rec.setdefault("expected", mechanical.expected[:500])
    rec.setdefault("observed", mechanical.observed[:500])
    rec.setdefault("judged_by", "unknown")
    rec["case_id"] = case.id
    rec["feature"] = case.feature
    rec["mechanical"] = {"verdict": mechanical.verdict, "reasons": list(mechanical.reasons)}
    rec["repair"] = accepted_repair
    rec["judge_panel"] = panel
    return rec


SUBMITTED_FIELDS = ("schema_version", "unit_id", "verdict", "reasons", "expected", "observed", "judgment",
                    "judged_by", "answers", "override")


def _same_submission(old: dict, new: dict, submitted: dict) -> bool:
    if old.get("repair") and old["repair"].get("original") == submitted:
        return True
    return all(old.get(k) == new.get(k) for k in SUBMITTED_FIELDS)


def record(config, case_set, run_dir: Path, unit_id: str, submitted: dict, judged: set[str] | None = None) -> dict:
    """Validate and record ``submitted`` for ``unit_id``; returns a status report."""
    run_dir = Path(run_dir)
    unit = resolve_unit(case_set, unit_id, load_run(run_dir))
    packet = load_packet(run_dir, unit.id)
    if packet is None:
        raise UsageError(f"no packet for {unit.id} in {run_dir}: drive it first (run_one.py --id {unit.id} --run-dir ...)")
    mechanical = check_packet(packet, unit.case, config)
    accepted = validate(submitted, unit.case, config, unit.id)
    check_override(accepted.value, mechanical.to_json())
    panel = panel_for_unit(run_dir, unit.id)
    check_panel(accepted.value, panel)
    rec = build_record(accepted.value, accepted.repair, mechanical, unit.case, packet, panel)
    path = verdict_path(run_dir, unit.id)
    wrote = False
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if not _same_submission(old, rec, submitted):
            raise WriteOnceViolation(
                f"{unit.id} is already judged ({old.get('verdict')} {old.get('reasons') or ''}) in {path}; "
                "a different verdict is refused (start a new run to judge again)")
        rec = old
    else:
        wrote = write_once(path, dumps_json(rec))
    appended = ensure_row(run_dir, unit, rec, packet, judged)
    return {"status": "recorded" if (wrote or appended) else "unchanged", "unit_id": unit.id,
            "verdict": rec["verdict"], "reasons": rec.get("reasons", []), "verdict_file": str(path),
            "row_appended": appended, "repair": rec.get("repair")}


def ensure_row(run_dir: Path, unit, rec: dict, packet: dict, judged: set[str] | None = None) -> bool:
    """Append the report row (and block) for a recorded verdict unless the row is there.

    ``judged`` — the ids with a row, kept by a caller that records many units — spares
    parsing report.md once per unit, which would make a run quadratic in its size.
    """
    if judged is None:
        judged = set(judged_ids(Path(run_dir) / "report.md"))
    if unit.id in judged:
        return False
    block = None
    if rec["verdict"] in ("fail", "needs_review"):
        block = detail_block(unit.id, rec["verdict"], packet.get("case", {}).get("query") or unit.case.query,
                             rec.get("expected", ""), rec.get("observed", ""), rec["judgment"])
    append_entry(Path(run_dir) / "report.md",
                 row([unit.id, unit.case.feature, rec["verdict"], reason_cell(rec), trace_cell(packet),
                      latency_cell(packet)]), block)
    judged.add(unit.id)
    return True
