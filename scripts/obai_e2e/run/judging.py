"""The mechanical judge of a headless run: check a unit's packet and record the verdict the rules imply.

A verdict that cannot be recorded (the check or the contract refuses it) is recorded as
that unit's ``inconclusive``/``harness_error`` with the reason, so the run goes on.
"""
from __future__ import annotations

from pathlib import Path

from ..base.errors import Interrupted, RunLocked, WriteOnceViolation
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet_record import Packet, load_packet
from ..judge.models.outcomes import unit_panel
from ..judge.rubric import check_packet
from ..judge.verdict import mechanical_verdict
from ..report.record import (
    ensure_row,
    load_verdict,
    record,
    record_harness_error,
    status_of,
    verdict_path,
)


def judge_unit(config: TargetConfig, run_dir: Path, unit: Unit, judged: set[str] | None = None, *,
               packet: Packet | None = None, keep: dict | None = None) -> dict:
    """Record the mechanical verdict of ``unit``; an existing verdict only gets its missing row.

    ``packet`` spares reading the packet again when the caller has just stored it. A verdict
    that cannot be recorded becomes the unit's ``harness_error``, never the run's end.
    ``keep`` receives the packet and the check a newly recorded verdict was made from.
    """
    existing = load_verdict(run_dir, unit.id)
    try:
        if packet is None:
            packet = load_packet(run_dir, unit.id)
        if existing is not None:
            appended = ensure_row(run_dir, unit, existing, packet, judged)
            return status_of(existing, verdict_path(run_dir, unit.id), appended, appended)
        check = check_packet(packet, unit.case, config)
        status = record(config, run_dir, unit, mechanical_verdict(check, unit_panel(run_dir, unit.id)), judged,
                        packet=packet, mechanical=check)
        if keep is not None:
            keep.update(packet=packet, check=check)
        return status
    except (Interrupted, WriteOnceViolation, RunLocked):
        raise
    except Exception as exc:  # noqa: BLE001 - one unit's verdict must not end the run
        return record_harness_error(run_dir, unit, f"{type(exc).__name__}: {exc}", judged)
