"""Run directories ``runs/<UTC date>/<UTC HHMMSS>/`` and their metadata, ``run.json``.

What enters: a new run's metadata (from the run stage) or an existing run directory.
What leaves: :class:`RunMeta`, the one reader and writer of run.json, and the lookups
over finished runs (latest, comparable baseline).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.clock import utc_now
from ..base.errors import UsageError
from ..base.fsutil import sha256_file, write_once_json
from ..base.paths import bundle_root, recorded, runs_root
from ..base.record import Record
from ..config.selection import Filters
from .inputs import FrozenInput, frozen_path

RUN_SCHEMA_VERSION = 1
RUN_FILE = "run.json"


@dataclass
class RunMeta(Record):
    """run.json: what was run, with which configuration, and which units it plans."""

    run_id: str
    created_at: str
    schema_version: int = RUN_SCHEMA_VERSION
    target: dict[str, Any] = field(default_factory=dict)
    target_config: str = ""
    target_config_sha256: str = ""
    cases_file: str = ""
    cases_sha256: str = ""
    git_commit: str | None = None
    filters: dict[str, Any] = field(default_factory=dict)
    mode: str = "A"
    provenance: str = "synthetic"
    trace_backend: dict[str, Any] = field(default_factory=dict)
    repeats: dict[str, int] = field(default_factory=dict)
    units: list[str] = field(default_factory=list)
    baseline_run: str | None = None
    disabled_skipped: list[str] = field(default_factory=list)
    holdout: bool = False
    shard: dict[str, Any] | None = None
    inputs: dict[str, FrozenInput] = field(default_factory=dict)  # the run's copies of its inputs (inputs.py)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if not self.inputs:
            out.pop("inputs")  # a run made before runs kept their inputs
        if not self.holdout:
            out.pop("holdout")  # written only for the one holdout run
        if self.shard is None:
            out.pop("shard")  # written only for one part of a sharded run
        return out

    @property
    def target_config_path(self) -> Path | None:
        """The target configuration this run was created with, in this checkout."""
        return recorded(self.target_config)

    @property
    def cases_path(self) -> Path | None:
        """The cases file this run was created with, in this checkout."""
        return recorded(self.cases_file)

    def located(self, which: str, flag: str) -> Path:
        """The target configuration (``which="target_config"``) or cases file (``"cases"``) this run was created
        with, found in this checkout: at its recorded path, or — when that was absolute on another machine (a CI
        runner) — at a trailing part of it under this bundle or the current directory whose bytes have the
        recorded SHA-256. A file found only by name is never taken for it."""
        text, digest = ((self.target_config, self.target_config_sha256) if which == "target_config"
                        else (self.cases_file, self.cases_sha256))
        path = recorded(text)
        if path is not None and path.is_file():
            return path
        if path is not None and digest:
            parts = path.parts[1:] if path.is_absolute() else path.parts
            for k in range(len(parts)):
                for base in (bundle_root(), Path.cwd()):
                    candidate = base.joinpath(*parts[k:])
                    if candidate.is_file() and sha256_file(candidate) == digest:
                        return candidate
        label = "target configuration" if which == "target_config" else "cases file"
        raise UsageError(f"the {label} the run was created with, {text or '(none recorded)'}, is not in this "
                         f"checkout (no file at that path, nor one with its SHA-256 under a trailing part of it); "
                         f"pass {flag} PATH")

    def input_path(self, run_dir: Path, role: str) -> Path | None:
        """The run's checked copy of an input (``cases``, ``target``, ``plan``, ``catalog``, ``gates``, ``judges``),
        or None when the run has none (made before runs kept their inputs, or without that file)."""
        return frozen_path(run_dir, self.inputs, role)

    @property
    def selection_filters(self) -> Filters:
        return Filters.from_json(self.filters)

    def repeats_of(self, case_id: str, default: int) -> int:
        planned = self.repeats.get(case_id)
        return int(planned) if planned else default

    def write(self, run_dir: Path) -> None:
        write_once_json(Path(run_dir) / RUN_FILE, self.to_json())


def load_run(run_dir: Path) -> RunMeta:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} does not exist (create one with: obai-e2e new-run)")
    path = run_dir / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{run_dir} is not a run directory: run.json is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None
    return RunMeta.from_json(data, source=str(path))


def run_id_of(run_dir: Path) -> str:
    return f"{Path(run_dir).parent.name}/{Path(run_dir).name}"


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


def latest_comparable_run(filters: Filters, cases_file: Path, root: Path | None = None) -> Path | None:
    """The newest finished development run of the same case file with the same filters."""
    for run in finished_runs(root):
        try:
            meta = load_run(run)
        except Exception:  # noqa: BLE001 - an unreadable old run is no baseline
            continue
        if meta.holdout or meta.shard or (meta.cases_path or Path("")).resolve() != Path(cases_file).resolve():
            continue  # a holdout run or a single shard is no baseline
        if meta.selection_filters == filters:
            return run
    return None


def plan_of(run_dir: Path) -> Path | None:
    """The loss plan the run was created with: its copy, else the ``--plan`` it recorded; None for the configured one."""
    meta = load_run(run_dir)
    return meta.input_path(run_dir, "plan") or recorded(meta.extra.get("loss_plan"))


def baseline_of(run_dir: Path) -> Path | None:
    """The baseline recorded when ``run_dir`` was created, if it still exists."""
    recorded = load_run(run_dir).baseline_run
    return Path(recorded) if recorded and (Path(recorded) / "results.json").exists() else None


def is_empty_dir(path: Path | None) -> bool:
    """True for a directory with nothing in it: a CI cache or artifact that had nothing to restore."""
    try:
        return path is not None and Path(path).is_dir() and not any(Path(path).iterdir())
    except OSError:
        return False


def chosen_baseline(run_dir: Path, given: Path | None) -> Path | None:
    """The baseline a run is compared with: ``given`` (``--baseline``; an empty directory means none),
    else the one recorded when the run was created."""
    if given is not None:
        return None if is_empty_dir(given) else Path(given)
    return baseline_of(run_dir)
