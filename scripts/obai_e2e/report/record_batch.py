"""Recording a judge's verdicts: one, or many in one call (JSON Lines), every problem named.

Enters: verdicts as a judge submits them. Each is checked by judge/submission (the case's
contract, an override for a mechanical hard failure, the panel's majority, an answer to
every open question) and, when nothing is wrong, recorded by report/record (the
write-once verdict file and its report.md row). A refused verdict is named with its line,
its unit and all its problems; the valid ones of the same batch are recorded all the same.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..base.errors import UsageError, VerdictInvalid, WriteOnceViolation
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet_record import load_packet, packet_path
from ..judge import submission
from ..judge.contract import Problem
from ..judge.panel.aggregate import panel_for_unit
from ..judge.rubric import check_packet
from .record import record
from .report_md import judged_ids

MAX_LINES = 5000


def _attempt(config: TargetConfig, run_dir: Path, unit: Unit, value: dict,
             judged: set[str] | None) -> tuple[list[Problem], dict | None]:
    """(problems, status): problems empty and the status of recording, or the problems and None."""
    packet = load_packet(run_dir, unit.id)
    if packet is None:
        return [Problem("/unit_id", f"{unit.id} has no packet yet: drive it first")], None
    check = check_packet(packet, unit.case, config)
    found = submission.problems(value, unit, config, check, panel_for_unit(run_dir, unit.id))
    if found:
        return found, None
    return [], record(config, run_dir, unit, value, judged, packet=packet, mechanical=check)


def record_judged(config: TargetConfig, run_dir: Path, unit: Unit, value: dict) -> dict:
    """Record one judge's verdict, or refuse it with every problem in the message."""
    found, status = _attempt(config, Path(run_dir), unit, value, None)
    if found:
        exc = VerdictInvalid(submission.message(found))
        exc.pointer = found[0].pointer
        raise exc
    return status


def _lines(text: str) -> list[tuple[int, str]]:
    rows = [(n, raw) for n, raw in enumerate(text.splitlines(), 1) if raw.strip()]
    if not rows:
        raise UsageError("--batch: no verdict in the input (one JSON object per line)")
    if len(rows) > MAX_LINES:
        raise UsageError(f"--batch: {len(rows)} verdicts in one call; send at most {MAX_LINES}")
    return rows


def record_batch(config: TargetConfig, run_dir: Path, units: list[Unit], text: str) -> tuple[bool, dict]:
    """(all accepted, report) for the verdicts of ``text``, one JSON object per line."""
    run_dir = Path(run_dir)
    by_id = {u.id: u for u in units}
    judged = set(judged_ids(run_dir / "report.md"))
    recorded, unchanged, refused = [], [], []
    for n, raw in _lines(text):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            refused.append({"line": n, "problems": [f"/: not a JSON object ({exc.msg} at column {exc.colno})"]})
            continue
        uid = value.get("unit_id") if isinstance(value, dict) else None
        unit = by_id.get(uid) if isinstance(uid, str) else None
        if unit is None:
            known = ", ".join(list(by_id)[:10]) + (" …" if len(by_id) > 10 else "")
            refused.append({"line": n, "unit_id": uid,
                            "problems": [f"/unit_id: {uid!r} is not a unit of this run (its units: {known})"]})
            continue
        try:
            found, status = _attempt(config, run_dir, unit, value, judged)
        except WriteOnceViolation as exc:  # judged before with another verdict
            found, status = [Problem("/verdict", str(exc))], None
        if found:
            refused.append({"line": n, "unit_id": unit.id, "problems": [str(p) for p in found]})
        else:
            (recorded if status["status"] == "recorded" else unchanged).append(unit.id)
    out = {"status": "recorded" if not refused else "refused_some",
           "recorded": f"{len(recorded)}" + (f": {', '.join(recorded)}" if recorded else ""),
           "unchanged": f"{len(unchanged)}" + (f": {', '.join(unchanged)}" if unchanged else ""),
           "refused": refused}
    left = sum(1 for u in units if u.id not in judged and packet_path(run_dir, u.id).exists())
    out["without_verdict"] = left
    if refused:
        out["next"] = "fix each refused verdict as its problems say and send those lines again"
    else:
        out["next"] = "review the next page" if left else "every driven unit has a verdict"
    return not refused, out
