"""Merging the shards of a run (``merge-runs``) into one run directory.

Enters: the run directories of ``run --shard K/N`` for every K, each finished or at least
judged. Leaves: one ordinary run directory holding every unit's packet and verdict (byte
copies), report.md rows in plan order, and then the usual finish: results.json, JUnit, the
loss layer against a baseline, report.html, runs/latest and the seal.

The parts must share the plan hash, the cases file's hash, the target configuration's
hash, the filters and the git commit, and cover the plan exactly once; anything else is
refused with a message that names the part and the unit. Merging again into the same
directory changes nothing; an interrupted merge is completed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..base.clock import parse_iso
from ..base.errors import UsageError
from ..base.fsutil import write_once
from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..drive.packet_record import load_packet, packet_path
from ..report.record import ensure_row, load_verdict, verdict_path
from ..report.report_md import ensure_header, judged_ids
from ..rundir.lock import RunLock
from ..rundir.meta import (
    RUN_FILE,
    RunMeta,
    latest_comparable_run,
    load_run,
    new_run_dir,
    run_id_of,
)
from .plan import plan

SHARED = ("cases_sha256", "target_config_sha256", "filters", "git_commit", "mode", "repeats")


@dataclass
class Part:
    """One shard's run directory and its metadata."""

    run_dir: Path
    meta: RunMeta

    @property
    def label(self) -> str:
        s = self.meta.shard or {}
        return f"shard {s.get('index')}/{s.get('total')} ({self.run_dir})"


def load_parts(dirs: list[Path]) -> list[Part]:
    if not dirs:
        raise UsageError("merge-runs needs the run directories of the shards")
    parts = []
    for d in dirs:
        meta = load_run(d)
        if not meta.shard:
            raise UsageError(f"{d} is not a shard (its run.json has no shard): only runs started with "
                             "--shard K/N can be merged")
        parts.append(Part(Path(d), meta))
    return parts


def check_parts(parts: list[Part]) -> list[str]:
    """The plan's units, after every check that the parts belong together and cover it once."""
    first = parts[0]
    total = first.meta.shard["total"]
    for p in parts[1:]:
        if p.meta.shard.get("plan_sha256") != first.meta.shard.get("plan_sha256"):
            raise UsageError(f"{p.label} was planned differently from {first.label} (plan hash "
                             f"{str(p.meta.shard.get('plan_sha256'))[:12]} vs {str(first.meta.shard.get('plan_sha256'))[:12]}): "
                             "every shard must run the same cases, filters, target configuration and timings")
        for key in SHARED:
            if getattr(p.meta, key) != getattr(first.meta, key):
                raise UsageError(f"{p.label} differs from {first.label} in {key}: {getattr(p.meta, key)!r} vs "
                                 f"{getattr(first.meta, key)!r}; shards of one run share it")
    indexes = Counter(p.meta.shard["index"] for p in parts)
    doubled = sorted(k for k, n in indexes.items() if n > 1)
    if doubled:
        twice = [p.label for p in parts if p.meta.shard["index"] in doubled]
        raise UsageError(f"shard {', '.join(f'{k}/{total}' for k in doubled)} given more than once: {'; '.join(twice)}")
    missing = sorted(set(range(1, total + 1)) - set(indexes))
    if missing:
        raise UsageError(f"shard {', '.join(f'{k}/{total}' for k in missing)} missing: the merge needs all {total} parts")
    plan_units = list(first.meta.shard["plan_units"])
    seen = Counter(u for p in parts for u in p.meta.units)
    twice = sorted(u for u, n in seen.items() if n > 1)
    if twice:
        raise UsageError(f"unit(s) in more than one shard: {', '.join(twice[:20])}")
    lacking = [u for u in plan_units if u not in seen]
    extra = sorted(set(seen) - set(plan_units))
    if lacking or extra:
        raise UsageError(f"the shards do not cover the plan exactly: missing {', '.join(lacking[:20]) or 'none'}; "
                         f"not planned {', '.join(extra[:20]) or 'none'}")
    for p in parts:
        unjudged = [u for u in p.meta.units if load_verdict(p.run_dir, u) is None]
        if unjudged:
            raise UsageError(f"{p.label}: {len(unjudged)} unit(s) have no verdict yet ({', '.join(unjudged[:10])}); "
                             f"finish that shard first (obai-e2e run --resume {p.run_dir})")
    return plan_units


def merged_meta(parts: list[Part], into: Path, plan_units: list[str]) -> RunMeta:
    first = min(parts, key=lambda p: p.meta.created_at)
    data = first.meta.to_json()
    data.pop("shard", None)
    data.update(run_id=run_id_of(into), units=plan_units)
    meta = RunMeta.from_json(data)
    meta.baseline_run = None
    baseline = latest_comparable_run(meta.selection_filters, Path(meta.cases_file))
    meta.baseline_run = str(baseline) if baseline else None
    meta.extra["merged_from"] = sorted(
        ({"shard": f"{p.meta.shard['index']}/{p.meta.shard['total']}", "run_id": p.meta.run_id,
          "run_dir": str(p.run_dir)} for p in parts), key=lambda m: int(m["shard"].split("/")[0]))
    meta.extra["plan_sha256"] = first.meta.shard["plan_sha256"]
    return meta


def merge(config: TargetConfig, case_set: CaseSet, dirs: list[Path], into: Path | None = None) -> Path:
    """Copy every part's units into one run directory with its report.md; the caller finishes it."""
    parts = load_parts(dirs)
    plan_units = check_parts(parts)
    if into is None:
        into = new_run_dir()
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    meta = merged_meta(parts, into, plan_units)
    existing = into / RUN_FILE
    if existing.exists():
        old = load_run(into)
        if old.extra.get("plan_sha256") != meta.extra["plan_sha256"]:
            raise UsageError(f"{into} already holds another run ({old.run_id}); merge into a new directory")
        meta = old
    elif any(into.iterdir()):
        raise UsageError(f"{into} is not empty; merge into a new or empty directory")
    with RunLock(into):
        if not existing.exists():
            meta.write(into)
        stamp = parse_iso(meta.created_at).strftime("%Y-%m-%d %H:%M:%S UTC")
        ensure_header(into / "report.md", stamp, meta.selection_filters.apply(case_set).disabled_line(),
                      meta.target.get("display_name") or config.display_name)
        owner = {u: p for p in parts for u in p.meta.units}
        for unit_id in plan_units:
            src = owner[unit_id].run_dir
            for path_of in (packet_path, verdict_path):
                source = path_of(src, unit_id)
                if source.exists():
                    write_once(path_of(into, unit_id), source.read_text(encoding="utf-8"))
        p = plan(into, case_set)
        judged = set(judged_ids(into / "report.md"))
        for unit in p.units:
            ensure_row(into, unit, load_verdict(into, unit.id), load_packet(into, unit.id), judged)
    return into
