"""The headless run: preflight → plan → drive → mechanical judge → record → finish.

One process drives up to ``jobs`` units at a time on threads (each unit is a real
subprocess of the target), judges and records each unit as it completes, and finishes
the run. A kill at any point leaves a run directory that the same command resumes.
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import preflight
from ..trace.backend import connect
from .judging import judge_unit
from ..drive.packet import drive
from ..judge.panel.command import run_panel
from .finish import catalog_version
from ..report.results import finalize
from ..rundir.layout import Filters, RunLock, create_run, load_run, plan
from ..drive.sandbox import install_signal_teardown
from ..protocol.seal import seal

EXIT_OK, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_NOT_READY = 0, 1, 3, 4


@dataclass
class Progress:
    """Reports each unit as it finishes (stderr; a bar on a terminal, lines otherwise)."""

    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    _bar: object = None
    _task: object = None

    def __enter__(self) -> "Progress":
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            self._bar = Bar(TextColumn("[bold]e2e[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"), console=console)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total)
        return self

    def unit(self, unit_id: str, verdict: str, reasons: list[str], seconds: float) -> None:
        self.done += 1
        line = f"[{self.done}/{self.total}] {unit_id} {verdict}{' ' + ', '.join(reasons) if reasons else ''} ({seconds:.1f}s)"
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=line)
            self._bar.console.print(line, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


def run(config, case_set, filters: Filters, *, jobs: int = 1, resume: Path | None = None,
        after_finish: Callable[[Path, dict], dict] | None = None, say: Callable[[str], None] = lambda m: None,
        panel_command: str | None = None, panel_judges: int = 3, repeats: dict | None = None,
        extra: dict | None = None) -> tuple[int, dict]:
    install_signal_teardown()
    report = preflight.run(config.path)
    if not report.ready:
        return EXIT_NOT_READY, {"status": "not_ready", "reason": report.reason, "next_step": report.next_step}
    if resume:
        run_dir = Path(resume)
        load_run(run_dir)
    else:
        run_dir, _ = create_run(config, case_set, filters, repeats=repeats, extra=extra)
    say(f"run directory: {run_dir}")
    backend = connect(config)
    with RunLock(run_dir):
        p = plan(run_dir, case_set)
        if p.disabled_line:
            say(p.disabled_line)
        todo = p.to_judge + p.pending
        judged = set(p.done)
        # With a panel every unit is driven first, then judged, so that the panel's
        # majority is part of each verdict; without one, units are judged as they finish.
        defer = bool(panel_command)
        with Progress(total=len(todo)) as progress:
            if not defer:
                for unit_id in p.to_judge:
                    t0 = time.monotonic()
                    res = judge_unit(config, case_set, run_dir, unit_id, judged)
                    progress.unit(unit_id, res["verdict"], res["reasons"], time.monotonic() - t0)
            _drive_all(config, case_set, run_dir, p.pending, backend, jobs, progress, judged, judge=not defer)
            if defer:
                say("judge panel: " + str(run_panel(run_dir, config, case_set, panel_command, judges=panel_judges)))
                for unit_id in todo:
                    t0 = time.monotonic()
                    res = judge_unit(config, case_set, run_dir, unit_id, judged)
                    progress.unit(unit_id, res["verdict"], res["reasons"], time.monotonic() - t0)
        outcome = finalize(config, case_set, run_dir, catalog_version=catalog_version(config))
        if after_finish is not None:
            outcome.update(after_finish(run_dir, outcome) or {})
        outcome["seal"] = seal(run_dir)["seal"]
    s = outcome["summary"]
    code = EXIT_FAIL if s["fail"] else (EXIT_INCONCLUSIVE if s["inconclusive"] else EXIT_OK)
    return code, outcome


def _drive_all(config, case_set, run_dir: Path, units: list[str], backend, jobs: int, progress: Progress,
               judged: set[str], judge: bool = True) -> None:
    if not units:
        return
    started: dict = {}
    queue = list(units)
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="unit") as pool:
        running = {}
        while queue or running:
            while queue and len(running) < max(1, jobs):
                unit_id = queue.pop(0)
                started[unit_id] = time.monotonic()
                running[pool.submit(drive, config, case_set, run_dir, unit_id, backend=backend)] = unit_id
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                unit_id = running.pop(future)
                future.result()  # a harness bug surfaces here rather than being lost
                if judge:
                    res = judge_unit(config, case_set, run_dir, unit_id, judged)
                    progress.unit(unit_id, res["verdict"], res["reasons"], time.monotonic() - started[unit_id])
