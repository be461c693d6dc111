"""Finding the unfinished run a ``run`` command left, so that the same command resumes it.

Enters: what a new run would be made of (configuration, cases, filters, repeats, shard,
loss plan). Leaves: the newest run directory that ``obai-e2e run`` started with exactly
that selection, on the same commit of the bundle and the same version of the target (its
``version_command``), and did not finish (no seal), when no other runner holds it; or
None. Such a run is resumed rather than started again, so finished units are never
driven twice.
"""
from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout

from ..base.fsutil import sha256_file
from ..base.paths import bundle_root, runs_root
from ..config.cases import CaseSet
from ..config.selection import Filters
from ..config.target import TargetConfig
from ..protocol.seal import SEAL
from ..rundir.lock import LOCK_NAME
from ..rundir.meta import RUN_FILE, RunMeta, load_run
from .plan import git_commit, planned_units, target_version
from .shard import ShardSpec

STARTED_BY = "run"  # run.json extra "started_by" of a run the run command made


def unfinished_run(config: TargetConfig, case_set: CaseSet, filters: Filters, *, repeats: dict | None = None,
                   shard: ShardSpec | None = None, shard_timings: Path | None = None, extra: dict | None = None,
                   root: Path | None = None) -> Path | None:
    root = root or runs_root()
    candidates = sorted((p.parent for p in root.glob(f"????-??-??/??????*/{RUN_FILE}")
                         if not (p.parent / SEAL).exists()), key=lambda p: (p.parent.name, p.name), reverse=True)
    if not candidates:
        return None
    planned, units = planned_units(filters.apply(case_set), repeats)
    wanted = {"filters": filters.to_json(), "cases_sha256": case_set.sha256, "repeats": planned,
              "target_config_sha256": sha256_file(config.path), "git_commit": git_commit(bundle_root()),
              "loss_plan": (extra or {}).get("loss_plan")}
    version: list[str | None] = []  # asked of the target once, and only for a run that matches otherwise
    for run_dir in candidates:
        try:
            meta = load_run(run_dir)
        except Exception:  # noqa: BLE001 - an unreadable run is nobody's to resume
            continue
        if not (_same(meta, wanted, units, shard, case_set) and _same_timings(meta, shard_timings)):
            continue
        if not version:
            version.append(target_version(config))
        if meta.target.get("version") == version[0] and not _held(run_dir):
            return run_dir
    return None


def _same(meta: RunMeta, wanted: dict, units: list[str], shard: ShardSpec | None, case_set: CaseSet) -> bool:
    if meta.holdout or meta.extra.get("started_by") != STARTED_BY:
        return False
    have = {"filters": meta.filters, "cases_sha256": meta.cases_sha256, "repeats": meta.repeats,
            "target_config_sha256": meta.target_config_sha256, "git_commit": meta.git_commit,
            "loss_plan": meta.extra.get("loss_plan")}
    if have != wanted or meta.cases_path is None or meta.cases_path.resolve() != Path(case_set.path).resolve():
        return False
    if shard is None:
        return meta.shard is None and meta.units == units
    s = meta.shard or {}
    return (s.get("index"), s.get("total"), s.get("plan_units")) == (shard.index, shard.total, units)


def _same_timings(meta: RunMeta, shard_timings: Path | None) -> bool:
    """A part split by an earlier run's latencies (--shard-timings) resumes only with the same ones."""
    recorded = ((meta.shard or {}).get("timings") or {}).get("sha256")
    if shard_timings is None:
        return recorded is None
    path = Path(shard_timings) / "results.json" if Path(shard_timings).is_dir() else Path(shard_timings)
    return path.is_file() and recorded == sha256_file(path)


def _held(run_dir: Path) -> bool:
    """Whether another runner holds the run directory now."""
    lock = FileLock(str(run_dir / LOCK_NAME), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return True
    lock.release()
    return False
