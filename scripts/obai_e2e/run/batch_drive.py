"""The chat flow's drive: every pending unit of a run, up to the mechanical check, no verdict.

The same pipeline as the headless run (headless.drive_all: drive → trace → curate → store
the packet, ``jobs`` turns at a time), then each unit's mechanical check, reported as one
:class:`~.drive_log.UnitLine` in the run's drive log. Verdicts are left to the judge. A kill
at any point leaves complete packets only; the next drive resumes with the units that
have none.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.evidence import needs_reread, reread_all
from ..drive.packet_record import Packet, load_packet
from ..drive.sandbox import clear_leftovers, install_signal_teardown
from ..drive.ui import close_all as close_ui_channels
from ..judge.rubric import check_packet
from ..report.record import verdict_path
from ..rundir.inputs import require_secrets
from ..rundir.lock import RunLock
from ..trace.backend import connect, warm_up
from .drive_log import DONE, FAILED, INTERRUPTED, DriveLog, UnitLine
from .headless import drive_all
from .plan import plan

# A second worker started while one is taking the lock waits this long before giving up.
LOCK_WAIT_S = 10


def unit_line(config: TargetConfig, unit: Unit, packet: Packet, seconds: float | None = None) -> UnitLine:
    check = check_packet(packet, unit.case, config)
    return UnitLine(unit=unit.id, verdict=check.verdict, reasons=list(check.reasons),
                    open=[q["id"] for q in check.questions],
                    seconds=None if seconds is None else round(seconds, 1))


def reread_driven(config: TargetConfig, backend, run_dir: Path, units: list[Unit], log: DriveLog) -> None:
    """Once every turn ended: read the units' traces again where a later write can only be detected
    (drive/evidence.py); a unit whose trace did not stay as read gets a new line with its new verdict."""
    unjudged = [u for u in units if not verdict_path(run_dir, u.id).exists()]
    if not needs_reread(config.backend.kind) or not unjudged:
        return
    backend = backend or connect(config, start_local=False)
    for uid in reread_all(config, backend, run_dir, unjudged):
        unit = next(u for u in units if u.id == uid)
        log.add(unit_line(config, unit, load_packet(run_dir, uid)))


def drive_run(config: TargetConfig, case_set: CaseSet, run_dir: Path, jobs: int) -> dict:
    """Drive every pending unit of ``run_dir`` and log each one's line; returns the closing counts."""
    run_dir = Path(run_dir)
    log = DriveLog(run_dir)
    with RunLock(run_dir, timeout_s=LOCK_WAIT_S):
        p = plan(run_dir, case_set)
        state = log.start(jobs, len(p.pending))
        try:
            install_signal_teardown()
            clear_leftovers(config)  # what a killed drive's turns left behind
            logged = {line.unit for line in log.lines()}
            for unit in p.to_judge:  # driven earlier: their lines, when a lost log lacks them
                if unit.id not in logged:
                    packet = load_packet(run_dir, unit.id)
                    if packet is not None:
                        log.add(unit_line(config, unit, packet))
            backend = None
            if p.pending:
                require_secrets(run_dir, p.meta.inputs)  # a copy without its secrets drives no turn
                backend = connect(config)
                warm_up(backend)

                def each(unit: Unit, packet: Packet, started: float) -> None:
                    log.add(unit_line(config, unit, packet, time.monotonic() - started))

                try:
                    drive_all(config, p, backend, jobs, each, sync_dir=True)
                finally:
                    close_ui_channels()
            reread_driven(config, backend, run_dir, p.to_judge + p.pending, log)
        except (KeyboardInterrupt, SystemExit):
            log.end(state, INTERRUPTED, "stopped by a signal; the units it was driving stay pending")
            raise
        except Exception as exc:
            log.end(state, FAILED, f"{type(exc).__name__}: {exc}")
            raise
        log.end(state, DONE)
    return {"status": DONE, "driven": len(p.pending)}
