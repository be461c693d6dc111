"""The headless run: preflight → plan → drive → mechanical judge → record → finish.

One process drives the units on threads with up to ``jobs`` turns of the target running
at a time (each a real subprocess; see drive.slots), judges and records each unit as it
completes, and finishes the run. A kill at any point leaves a run directory that the same
command resumes.
"""
from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..base.errors import Exit, UsageError
from ..base.paths import recorded
from ..config.cases import CaseSet
from ..config.selection import Filters, Selection
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.agent_env import hold_back
from ..drive.evidence import needs_reread, reread_all
from ..drive.packet import build_packet, store_packet
from ..drive.packet_record import Packet
from ..drive.sandbox import install_signal_teardown, remove_finished
from ..drive.slots import Slots, UnitSlot
from ..drive.ui import close_all as close_ui_channels
from ..judge.models.config import PanelConfig, command_panel
from ..judge.models.config import load as load_judges
from ..judge.models.keys import preflight as preflight_judges
from ..judge.models.runner import brief, run_panel
from ..protocol.seal import seal
from ..report.finalize import finalize
from ..report.record import verdict_path
from ..report.results import unit_result
from ..report.spool import EntrySpool
from ..rundir.inputs import frozen_path, require_secrets, with_copies
from ..rundir.lock import RunLock
from ..rundir.meta import RunMeta, load_run
from ..trace.backend import Backend, connect, warm_up
from . import preflight
from .finish import catalog_version
from .judging import judge_unit
from .plan import RunPlan, create_run, plan
from .progress import Progress
from .shard import ShardSpec

APART_MARGIN_S = 0.1  # on top of the window's slack, for timestamps rounded on either side
# The kernel may hand SIGINT/SIGTERM to any thread of the process; Python runs its handler in the
# main thread only once that thread wakes. Waiting on the units in slices of this length bounds
# how long a stop can go unnoticed (an unbounded wait woke only when a unit ended: a whole turn).
WAKE_S = 0.25


@dataclass(frozen=True)
class RunOptions:
    """How one headless run goes: what to select, how many turns at a time, what to resume, the judges,
    sharding and baseline, and what to tell whom along the way."""

    filters: Filters = field(default_factory=Filters)
    jobs: int = 1
    """Turns of the target running at the same time (1 to 256)."""
    resume: Path | None = None
    """An existing run directory to finish instead of a new one."""
    repeats: dict | None = None
    """Repeats per case from a sampling plan (default: each case's own)."""
    extra: dict | None = None
    """More for run.json's ``extra`` (who started it, the sampling plan)."""
    shard: ShardSpec | None = None
    shard_timings: Path | None = None
    baseline: Path | None = None
    """A run directory or results file to compare with (default: the newest comparable run)."""
    panel_command: str | None = None
    panel_judges: int = 3
    judges: PanelConfig | None = None
    after_finish: Callable[[Path, dict], dict] | None = None
    """Called with the finished run and its outcome; what it returns is added to the outcome."""
    say: Callable[[str], None] = lambda m: None
    on_run_dir: Callable[[Path], None] = lambda d: None
    """Learns the run directory as soon as it exists."""

    def check(self) -> None:
        if not isinstance(self.jobs, int) or not 1 <= self.jobs <= 256:
            raise UsageError(f"jobs: {self.jobs!r} is out of range: use 1 to 256 turns at the same time")
        if self.shard is not None and (self.panel_command or self.judges):
            raise UsageError("a sharded run is judged mechanically: its parts record their verdicts before they are "
                             "merged, so a panel could not change them; drop --judges / --panel-command, or run "
                             "unsharded")

    def panel(self) -> PanelConfig | None:
        return self.judges or (command_panel(self.panel_command, judges=self.panel_judges)
                               if self.panel_command else None)


def run(config: TargetConfig, case_set: CaseSet, options: RunOptions) -> tuple[int, dict]:
    """Run (or resume) the suite to its finish, as ``options`` say."""
    options.check()
    say = options.say
    install_signal_teardown()
    panel = options.panel()
    if panel is not None:
        preflight_judges(panel, os.environ)  # a missing key stops the run before any unit is driven
        hold_back(j.api_key_env for j in panel.judges)  # the judges' keys never reach the agent
    report = preflight.run(config, case_set, baseline=options.baseline,
                           filters=load_run(options.resume).selection_filters if options.resume else options.filters)
    if not report.ready:
        return Exit.NOT_READY, {"status": "not_ready", "reason": report.reason, "next_step": report.next_step}
    for warning in report.warnings:
        say(f"warning: {warning}")
    backend = connect(config)
    if options.resume:
        run_dir = Path(options.resume)
        load_run(run_dir)
    else:
        judges_file = (Path(panel.source), panel.sha256) if panel is not None and panel.sha256 else None
        run_dir, _ = create_run(config, case_set, options.filters, repeats=options.repeats, extra=options.extra,
                                shard=options.shard, shard_timings=options.shard_timings, selection=report.selection,
                                judges=judges_file)
    options.on_run_dir(run_dir)
    say(f"run directory: {run_dir}")
    return _drive_and_finish(config, case_set, run_dir, backend, panel, report.selection, options)


def _drive_and_finish(config: TargetConfig, case_set: CaseSet, run_dir: Path, backend: Backend,
                      panel: PanelConfig | None, selection: Selection | None, options: RunOptions) -> tuple[int, dict]:
    """Drive, judge, record and finish ``run_dir`` under its lock; the exit code and the outcome."""
    say = options.say
    inputs = load_run(run_dir).inputs
    config, panel = with_copies(config, run_dir, inputs), frozen_panel(panel, run_dir, inputs)
    with RunLock(run_dir):
        p = plan(run_dir, case_set, selection=selection)
        if p.pending:
            require_secrets(run_dir, inputs)  # a copy without its secrets drives no turn
            warm_up(backend)  # the SDK is imported while the first turns run; a finished run never needs it
        if p.disabled_line:
            say(p.disabled_line)
        todo = p.to_judge + p.pending
        judged = {u.id for u in p.done}
        spool = (EntrySpool(run_dir), p.meta)
        # With a panel every unit is driven first, then judged, so that the panel's majority is part of
        # each verdict; on a backend where a later write can only be detected, every unit is driven first
        # and its traces read once more (drive/evidence.py); otherwise units are judged as they finish.
        reread = needs_reread(backend.kind)
        defer = panel is not None or reread
        asked = None
        with Progress(total=len(todo)) as progress:
            if not defer:
                for unit in p.to_judge:
                    _judge(config, run_dir, unit, judged, progress, time.monotonic(), spool)
            def each(unit: Unit, packet: Packet, started: float) -> None:
                _judge(config, run_dir, unit, judged, progress, started, spool, packet)

            try:
                drive_all(config, p, backend, options.jobs, None if defer else each, sync_dir=defer)
            finally:
                close_ui_channels()  # the browser and a web UI the run started
            if reread:
                unjudged = [u for u in todo if not verdict_path(run_dir, u.id).exists()]
                changed = reread_all(config, backend, run_dir, unjudged)
                if changed:
                    say(f"traces changed after their turns ended (read again): {', '.join(changed[:20])}")
            if panel is not None:
                asked = run_panel(run_dir, config, p.units, panel, say=say)
                say(brief(asked, panel)["line"])
            if defer:
                for unit in todo:
                    _judge(config, run_dir, unit, judged, progress, time.monotonic(), spool)
        outcome = finalize(config, case_set, run_dir, p.units, catalog_version=catalog_version(config), spool=spool[0],
                           baseline=options.baseline)
        if options.after_finish is not None:
            outcome.update(options.after_finish(run_dir, outcome) or {})
        if asked is not None:
            outcome["judges"] = brief(asked, panel)
        outcome["seal"] = seal(run_dir)["seal"]
    s = outcome["summary"]
    code = Exit.UNIT_FAILED if s["fail"] else (Exit.INCONCLUSIVE if inconclusive(outcome) else Exit.OK)
    return code, outcome


def frozen_panel(panel: PanelConfig | None, run_dir: Path, inputs: dict) -> PanelConfig | None:
    """The judge panel from the run's copy of its panel file when the panel was read from the file the run copied
    and that file changed since (a resumed run is judged by the panel it was made with); a panel file named
    otherwise is used as given."""
    path = frozen_path(run_dir, inputs, "judges")
    if panel is None or not panel.sha256 or path is None or inputs["judges"].live_sha256 == panel.sha256:
        return panel
    copied_from = recorded(inputs["judges"].source)
    return load_judges(path) if copied_from and copied_from.resolve() == Path(panel.source).resolve() else panel


def inconclusive(outcome: dict) -> bool:
    """Some unit is inconclusive, or a question the judge panel was asked was decided for none of its units."""
    return bool(outcome["summary"]["inconclusive"] or outcome.get("judges_left_undecided"))


def _judge(config: TargetConfig, run_dir: Path, unit: Unit, judged: set[str], progress: Progress,
           started: float, spool: tuple[EntrySpool, RunMeta], packet: Packet | None = None) -> None:
    """Judge ``unit``, show it, and keep its results entry for finalize (``spool``: where, and the run's meta)."""
    keep: dict = {}
    res = judge_unit(config, run_dir, unit, judged, packet=packet, keep=keep)
    note = res.get("judgment") if res["verdict"] == "inconclusive" else None
    progress.unit(unit.id, res["verdict"], res["reasons"], time.monotonic() - started, note=note)
    if keep:
        try:
            entry = unit_result(config, run_dir, unit, spool[1], packet=keep["packet"], check=keep["check"])
            spool[0].add(unit.id, entry.to_json())
        except Exception:  # noqa: BLE001 - a cache: finalize builds what it lacks from the files
            pass


def drive_all(config: TargetConfig, p: RunPlan, backend: Backend, jobs: int,
              each: Callable[[Unit, Packet, float], None] | None, *, sync_dir: bool = True) -> None:
    """Drive the pending units on worker threads, ``jobs`` turns at a time; hand each stored one to ``each``.

    Twice as many units as turn slots are in flight: while one unit's turn runs, another's
    trace is read and curated, its packet stored and its sandbox torn down, or it waits for
    an async job. ``each(unit, packet, started)`` runs here, on this thread, after the next
    unit has started, so that its file writes overlap that unit's turn instead of adding to
    the run's wall time. ``sync_dir`` False leaves the packet's directory fsync to a verdict
    written next.
    """
    if not p.pending:
        return
    started: dict[str, float] = {}
    queue = deque(p.pending)
    corr = config.correlation
    # Told apart by time window and query only: turns asking the same never overlap (drive/slots.py).
    slots = Slots(max(1, jobs), apart_s=corr.window_slack_s + APART_MARGIN_S if corr.window else None)
    workers = 2 * slots.n
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="unit") as pool:
            running: dict = {}

            def fill() -> None:
                while queue and len(running) < workers:
                    unit = queue.popleft()
                    started[unit.id] = time.monotonic()
                    running[pool.submit(_drive_one, config, backend, p, unit, slots.for_unit(), sync_dir)] = unit

            fill()
            while running:
                done, _ = wait(running, timeout=WAKE_S, return_when=FIRST_COMPLETED)
                if not done:
                    continue
                finished = sorted(((running.pop(future), future) for future in done), key=lambda f: f[0].id)
                fill()
                for unit, future in finished:
                    packet = future.result()  # a harness bug surfaces here rather than being lost
                    began = started.pop(unit.id)  # nothing of a finished unit stays behind
                    if each is not None:
                        each(unit, packet, began)
    finally:
        remove_finished()  # after the pool has waited for its workers' teardowns


def _drive_one(config: TargetConfig, backend: Backend, p: RunPlan, unit: Unit, slot: UnitSlot,
               sync_dir: bool) -> Packet:
    """Drive ``unit`` and store its packet (on a worker thread, so that stores overlap)."""
    data = build_packet(config, backend, p.run_dir, p.meta, unit, defer_removal=True, slot=slot)
    packet, _ = store_packet(p.run_dir, unit.id, data, sync_dir=sync_dir)
    return packet
