"""Run directories: ``runs/<UTC date>/<UTC HHMMSS>/``, their metadata, lock and plan."""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from ..config.cases import CaseSet, Selection, select
from ..base.clock import iso, utc_now
from ..base.errors import RunLocked, UsageError
from ..base.fsutil import atomic_write_json, write_once_json
from ..base.paths import bundle_root, runs_root
from ..report.report_md import ensure_header, judged_ids
from ..config.units import units_of

RUN_SCHEMA_VERSION = 1
LOCK_NAME = ".runner.lock"


def git_commit(root: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def target_version(config) -> str | None:
    cmd = config.target.version_command
    if not cmd:
        return None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=str(config.target.workdir),
                              env={**os.environ, **config.target.env}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout or done.stderr).strip()[:200] or None


@dataclass(frozen=True)
class Filters:
    """What the user asked to run."""

    smoke: bool = False
    features: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"smoke": self.smoke, "features": list(self.features), "ids": list(self.ids)}

    @classmethod
    def from_json(cls, data: dict) -> "Filters":
        return cls(bool(data.get("smoke")), tuple(data.get("features", [])), tuple(data.get("ids", [])))

    def apply(self, case_set: CaseSet) -> Selection:
        return select(case_set, smoke=self.smoke, features=self.features, ids=self.ids)


def new_run_dir(root: Path | None = None) -> Path:
    """Create ``runs/<date>/<HHMMSS>/`` once; a second run in the same second waits for the next."""
    root = root or runs_root()
    while True:
        now = utc_now()
        path = root / now.strftime("%Y-%m-%d") / now.strftime("%H%M%S")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir()
            return path
        except FileExistsError:
            time.sleep(1.05 - now.microsecond / 1e6)


def latest_run(root: Path | None = None) -> Path | None:
    """The finished run that runs/latest points at, if any."""
    link = (root or runs_root()) / "latest"
    try:
        target = link.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        return None
    return target if (target / "results.json").exists() else None


def finished_runs(root: Path | None = None) -> list[Path]:
    """Finished run directories, newest first."""
    root = root or runs_root()
    runs = [p for p in root.glob("????-??-??/??????*") if (p / "results.json").exists()]
    return sorted(runs, key=lambda p: (p.parent.name, p.name), reverse=True)


def latest_comparable_run(filters: "Filters", cases_file: Path, root: Path | None = None) -> Path | None:
    """The newest finished development run of the same case file with the same filters."""
    for run in finished_runs(root):
        try:
            meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if meta.get("holdout") or Path(meta.get("cases_file", "")).resolve() != Path(cases_file).resolve():
            continue
        if Filters.from_json(meta.get("filters", {})) == filters:
            return run
    return None


def baseline_of(run_dir: Path) -> Path | None:
    """The baseline recorded when ``run_dir`` was created, if it still exists."""
    recorded = load_run(run_dir).get("baseline_run")
    return Path(recorded) if recorded and (Path(recorded) / "results.json").exists() else None


def run_id_of(run_dir: Path) -> str:
    return f"{run_dir.parent.name}/{run_dir.name}"


def provenance_of(cases) -> str:
    kinds = {c.provenance for c in cases}
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "synthetic")


def create_run(config, case_set: CaseSet, filters: Filters, *, root: Path | None = None,
               extra: dict | None = None, repeats: dict[str, int] | None = None) -> tuple[Path, dict]:
    """Make a run directory with run.json and the report header.

    ``repeats`` (from a sampling plan) overrides how often each selected case runs.
    """
    selection = filters.apply(case_set)
    if repeats:
        unknown = sorted(set(repeats) - {c.id for c in selection.cases})
        if unknown:
            raise UsageError(f"the sampling plan names cases the filters do not select: {', '.join(unknown)}")
    # A holdout run is compared with nothing: its cases were never run before.
    baseline = None if (extra or {}).get("holdout") else latest_comparable_run(filters, case_set.path)
    if not selection.cases:
        raise UsageError("the filters select no case (disabled cases run only when named with --id)")
    run_dir = new_run_dir(root)
    created = utc_now()
    meta = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id_of(run_dir),
        "created_at": iso(created),
        "target": {"name": config.target.name, "command": config.target.command,
                   "version": target_version(config)},
        "target_config": str(config.path),
        "cases_file": str(case_set.path),
        "cases_sha256": case_set.sha256,
        "git_commit": git_commit(bundle_root()),
        "filters": filters.to_json(),
        "mode": config.mode,
        "provenance": provenance_of(selection.cases),
        "trace_backend": {"kind": config.backend.kind, "project": config.backend.project},
        "repeats": {c.id: (repeats or {}).get(c.id, c.repeats) for c in selection.cases},
        "units": [u.id for c in selection.cases for u in units_of(c, repeats=(repeats or {}).get(c.id))],
        "baseline_run": str(baseline) if baseline else None,
        "disabled_skipped": [c.id for c in selection.skipped_disabled],
    }
    if extra:
        meta.update(extra)
    write_once_json(run_dir / "run.json", meta)
    ensure_header(run_dir / "report.md", created.strftime("%Y-%m-%d %H:%M:%S UTC"), selection.disabled_line())
    return run_dir, meta


def load_run(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} does not exist (create one with: obai-e2e new-run)")
    path = run_dir / "run.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{run_dir} is not a run directory: run.json is missing") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


@dataclass(frozen=True)
class Plan:
    """Which units of a run are still to do, and in which state the others are."""

    pending: list[str]
    to_judge: list[str]
    done: list[str]
    disabled_line: str | None

    def to_json(self) -> dict:
        return {"pending": self.pending, "to_judge": self.to_judge, "done": self.done,
                "disabled_line": self.disabled_line}


def plan(run_dir: Path, case_set: CaseSet, filters: Filters | None = None) -> Plan:
    """Units without a report row: ``to_judge`` have a packet already, ``pending`` need driving."""
    meta = load_run(run_dir)
    filters = filters or Filters.from_json(meta.get("filters", {}))
    selection = filters.apply(case_set)
    judged = set(judged_ids(Path(run_dir) / "report.md"))
    pending, to_judge, done = [], [], []
    for case in selection.cases:
        for unit in units_of(case, meta):
            if unit.id in judged:
                done.append(unit.id)
            elif (Path(run_dir) / f"{unit.id}.json").exists():
                to_judge.append(unit.id)
            else:
                pending.append(unit.id)
    return Plan(pending, to_judge, done, selection.disabled_line())


class RunLock:
    """Keeps two runners off one run directory (non-blocking by default)."""

    def __init__(self, run_dir: Path, timeout_s: float = 0):
        self.run_dir = Path(run_dir)
        self.lock = FileLock(str(self.run_dir / LOCK_NAME), timeout=timeout_s)
        self.owner = self.run_dir / ".runner.owner.json"

    def __enter__(self) -> "RunLock":
        try:
            self.lock.acquire()
        except Timeout:
            holder = ""
            try:
                holder = f" (held by pid {json.loads(self.owner.read_text())['pid']})"
            except (OSError, ValueError, KeyError):
                pass
            raise RunLocked(f"another runner is working on {self.run_dir}{holder}; wait for it or use another run directory") from None
        atomic_write_json(self.owner, {"pid": os.getpid(), "since": iso(utc_now())})
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()
