"""The mechanical judge: check a unit's packet and record the verdict the rules imply."""
from __future__ import annotations

from pathlib import Path

from ..judge.panel.aggregate import panel_for_unit
from ..drive.packet import load_packet
from ..report.record import ensure_row, load_verdict, record, verdict_path
from ..judge.rubric import check_packet
from ..rundir.layout import load_run
from ..config.units import resolve_unit
from ..judge.verdict import mechanical_verdict


def judge_unit(config, case_set, run_dir: Path, unit_id: str, judged: set[str] | None = None) -> dict:
    """Record the mechanical verdict of ``unit_id``; an existing verdict only gets its missing row."""
    unit = resolve_unit(case_set, unit_id, load_run(run_dir))
    packet = load_packet(run_dir, unit_id)
    existing = load_verdict(run_dir, unit_id)
    if existing is not None:
        appended = ensure_row(run_dir, unit, existing, packet, judged)
        return {"status": "recorded" if appended else "unchanged", "unit_id": unit_id,
                "verdict": existing["verdict"], "reasons": existing.get("reasons", []),
                "verdict_file": str(verdict_path(run_dir, unit_id)), "row_appended": appended,
                "repair": existing.get("repair")}
    check = check_packet(packet, unit.case, config)
    return record(config, case_set, run_dir, unit_id, mechanical_verdict(check, panel_for_unit(run_dir, unit_id)),
                  judged)
