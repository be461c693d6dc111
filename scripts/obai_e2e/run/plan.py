"""The run plan: a new run directory for the selected cases, and which of its units are still to do.

Enters: the target configuration, a case set and the user's filters (new run), or a run
directory (resume). Leaves: :class:`RunPlan`, whose units are resolved once here and
handed to every later step.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import ObaiError, UsageError
from ..base.fsutil import sha256_file
from ..base.paths import bundle_root, portable, recorded
from ..base.redact import Redactor
from ..config.cases import CaseSet, load_cases_for
from ..config.judges_file import default_path as default_judges_path
from ..config.selection import Filters, Selection
from ..config.target import TargetConfig
from ..config.units import Unit, units_of
from ..drive.agent_env import judge_keys
from ..drive.containment import run_version_command
from ..judge.panel.fixed_items import default_path as default_calibration_path
from ..loss.plan import default_plan_path
from ..protocol.gates import GATES_FILE
from ..protocol.holdout import is_holdout_file, open_holdout
from ..report.report_md import ensure_header, judged_ids
from ..rundir.inputs import copy_inputs
from ..rundir.meta import (
    RunMeta,
    latest_comparable_run,
    load_run,
    new_run_dir,
    run_id_of,
)
from .shard import ShardSpec, assign, plan_hash, weights_for


def git_commit(root: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def target_version(config: TargetConfig) -> str | None:
    cmd = config.target.version_command
    if not cmd:
        return None
    try:
        done = run_version_command(config, config.target.workdir)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout or done.stderr).strip()[:200] or None


def provenance_of(cases) -> str:
    kinds = {c.provenance for c in cases}
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "synthetic")


def planned_units(selection, repeats: dict[str, int] | None) -> tuple[dict[str, int], list[str]]:
    """(repeats per selected case, the unit ids in plan order) of a selection (``Filters.apply``)."""
    planned = {c.id: (repeats or {}).get(c.id, c.repeats) for c in selection.cases}
    return planned, [u.id for c in selection.cases for u in units_of(c, planned, channels=selection.channels)]


def input_sources(config: TargetConfig, case_set: CaseSet, extra: dict | None,
                  judges: Path | None = None) -> dict[str, Path | None]:
    """The files a new run copies (rundir/inputs.py): its cases, the target configuration, the loss plan it will
    be scored with, the loss catalog, the gate definitions, the judge panel file (``judges``, else the
    default one) and the judges' calibration items."""
    plan = recorded((extra or {}).get("loss_plan")) or config.plan or default_plan_path()
    return {"cases": case_set.path, "target": config.path, "plan": plan, "catalog": config.catalog,
            "gates": bundle_root() / GATES_FILE, "judges": judges or default_judges_path(),
            "calibration": default_calibration_path()}


def input_secrets(config: TargetConfig, case_set: CaseSet) -> list[str]:
    """What never goes into the run's copies, as into its packets: the values of secret-named variables of the
    harness's environment, the target's ``env`` and every case's ``env``."""
    env = {**os.environ, **config.target.env}
    for case in case_set.cases:
        env.update(case.env)
    return Redactor(env, [*config.redact_patterns, *judge_keys()]).values


def create_run(config: TargetConfig, case_set: CaseSet, filters: Filters, *, root: Path | None = None,
               extra: dict | None = None, repeats: dict[str, int] | None = None,
               holdout: bool = False, shard: ShardSpec | None = None,
               shard_timings: Path | None = None, selection: Selection | None = None,
               judges: tuple[Path, str | None] | None = None) -> tuple[Path, RunMeta]:
    """Make a run directory with run.json, the run's copy of its inputs and the report header.

    ``repeats`` (from a sampling plan) overrides how often each selected case runs; ``shard``
    keeps only this runner's part of the units (see run/shard.py). ``selection`` is ``filters``
    applied to ``case_set`` when the caller has built it already (preflight does). ``judges``:
    the judge panel file the run was given and the SHA-256 it was read with.
    """
    selection = selection or filters.apply(case_set)
    if repeats:
        unknown = sorted(set(repeats) - {c.id for c in selection.cases})
        if unknown:
            raise UsageError(f"the sampling plan names cases the filters do not select: {', '.join(unknown)}")
    if not selection.cases:
        raise UsageError("the filters select no case (disabled cases run only when named with --id)")
    # A holdout run is compared with nothing: its cases were never run before.
    baseline = None if holdout else latest_comparable_run(filters, case_set.path)
    run_dir = new_run_dir(root)
    created = utc_now()
    planned, units = planned_units(selection, repeats)
    target_sha = sha256_file(config.path)
    shard_info = None
    if shard is not None:
        weights, timings = weights_for(units, shard_timings)
        split = assign(units, shard.total, weights)
        shard_info = {"index": shard.index, "total": shard.total, "plan_units": units, "timings": timings,
                      "plan_sha256": plan_hash(cases_sha256=case_set.sha256, filters=filters.to_json(),
                                               repeats=planned, units=units, target_sha256=target_sha,
                                               weights=weights)}
        units = [u for u in units if split[u] == shard.index]
        baseline = None  # a part is compared with nothing; the merged run is
    sources = input_sources(config, case_set, extra, judges[0] if judges else None)
    expect = {"cases": case_set.sha256, "target": target_sha, **({"judges": judges[1]} if judges and judges[1] else {})}
    try:
        inputs = copy_inputs(run_dir, sources, expect, secrets=input_secrets(config, case_set))
    except ObaiError:
        shutil.rmtree(run_dir, ignore_errors=True)  # not a run yet: no run.json
        raise
    meta = RunMeta(
        inputs=inputs,
        run_id=run_id_of(run_dir),
        created_at=iso(created),
        target={"name": config.target.name, "display_name": config.display_name, "command": config.target.command,
                "version": target_version(config)},
        # Relative to the bundle (when inside its checkout): later commands on this run may start
        # in another directory, or in another checkout of the same commit (a CI merge job).
        target_config=portable(config.path),
        target_config_sha256=target_sha,
        cases_file=portable(case_set.path),
        cases_sha256=case_set.sha256,
        git_commit=git_commit(bundle_root()),
        filters=filters.to_json(),
        mode=config.mode,
        provenance=provenance_of(selection.cases),
        trace_backend={"kind": config.backend.kind, "project": config.backend.project},
        repeats=planned,
        units=units,
        baseline_run=str(baseline) if baseline else None,
        disabled_skipped=[c.id for c in selection.skipped_disabled],
        holdout=holdout,
        shard=shard_info,
        extra=dict(extra or {}),
    )
    meta.write(run_dir)
    ensure_header(run_dir / "report.md", created.strftime("%Y-%m-%d %H:%M:%S UTC"), selection.disabled_line(),
                  config.display_name)
    return run_dir, meta


@dataclass
class RunPlan:
    """A run's units, resolved once, and where each stands: to drive, to judge, or done."""

    run_dir: Path
    meta: RunMeta
    units: list[Unit]
    pending: list[Unit] = field(default_factory=list)
    to_judge: list[Unit] = field(default_factory=list)
    done: list[Unit] = field(default_factory=list)
    disabled_line: str | None = None

    def unit(self, unit_id: str) -> Unit:
        for u in self.units:
            if u.id == unit_id:
                return u
        raise UsageError(f"{unit_id!r} is not a unit of {self.run_dir} (its units: "
                         f"{', '.join(u.id for u in self.units[:20])}{' …' if len(self.units) > 20 else ''})")

    def to_json(self) -> dict:
        return {"pending": [u.id for u in self.pending], "to_judge": [u.id for u in self.to_judge],
                "done": [u.id for u in self.done], "disabled_line": self.disabled_line}


def plan(run_dir: Path, case_set: CaseSet, filters: Filters | None = None, *,
         selection: Selection | None = None) -> RunPlan:
    """The run's units: ``to_judge`` have a packet already, ``pending`` need driving, ``done`` have a row.

    ``selection``: the run's filters applied to ``case_set`` already (built once, by preflight)."""
    run_dir = Path(run_dir)
    meta = load_run(run_dir)
    selection = selection or (filters or meta.selection_filters).apply(case_set)
    if not (run_dir / "report.md").exists():  # a run stopped between its run.json and its report.md
        ensure_header(run_dir / "report.md", parse_iso(meta.created_at).strftime("%Y-%m-%d %H:%M:%S UTC"),
                      selection.disabled_line(), meta.target.get("display_name") or "OBaI")
    judged = set(judged_ids(run_dir / "report.md"))
    listed = set(meta.units)
    p = RunPlan(run_dir, meta, [], disabled_line=selection.disabled_line())
    for case in selection.cases:
        for unit in units_of(case, meta.repeats, channels=selection.channels):
            if unit.id not in listed:  # another shard's unit
                continue
            p.units.append(unit)
            if unit.id in judged:
                p.done.append(unit)
            elif (run_dir / f"{unit.id}.json").exists():
                p.to_judge.append(unit)
            else:
                p.pending.append(unit)
    return p


def open_holdout_run(config: TargetConfig, dev_run: Path, holdout_cases: Path | None = None) -> dict:
    """Open the holdout once (protocol.holdout.open_holdout checks the gate and the freeze) and create its run."""

    path = Path(holdout_cases or config.holdout_cases or "")
    if not path.is_file():
        raise UsageError(f"no holdout cases file at {path}; set run.holdout_cases in the target configuration")
    if not is_holdout_file(path):
        raise UsageError(f"{path} is not marked 'holdout: true'; a holdout set must say so")

    def make_run() -> Path:
        # Reached only after every check passed: this parse is the one open.
        cases = load_cases_for(config, path, allow_holdout=True)
        run_dir, _ = create_run(config, cases, Filters(), holdout=True)
        return run_dir

    return open_holdout(config, dev_run, path, create_run=make_run)
