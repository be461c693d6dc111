"""Merging the shards of a run (``merge-runs``) into one run directory.

Enters: the run directories of ``run --shard K/N`` for every K, each finished and sealed.
Leaves: one ordinary run directory holding every unit's packet, verdict and kept traces
(byte copies), report.md rows in plan order, and then the usual finish: results.json, JUnit, the loss
layer against a baseline, report.html, runs/latest and the seal.

A part is evidence only as sealed: its seal must verify (as ``freeze-audit verify
--run-dir`` checks it), no symbolic link is followed, each record must belong to its
file's unit and its shard's run, and each verdict must be its mechanical outcome unless
an override says why (shard_evidence.py). The parts must share the plan hash, the cases
file's hash, the target configuration's hash, the filters and the git commit, and cover
the plan exactly once. Every check runs before anything is written; a part that fails one
is refused with the check's name (``MergeRefused``, exit 2). The checks read each unit's
records and keep its id only; the copy reads them again, a unit at a time. The bytes copied are those
whose hashes were checked against the parts' seals, and run.json names each part's seal
by its hash, so the merged seal covers what was verified. Merging again into the same
directory changes nothing; an interrupted merge is completed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..base.clock import parse_iso
from ..base.errors import MergeRefused, UsageError
from ..base.fsutil import fsync_dir, write_once
from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..drive.packet_record import load_packet, packet_path
from ..drive.trace_snapshot import SNAPSHOT_DIR, snapshot_path
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
from .shard_evidence import SealedShard, refuse_links

SHARED = ("cases_sha256", "target_config_sha256", "filters", "git_commit", "mode", "repeats")


@dataclass
class Part:
    """One shard's run directory, sealed, and its metadata."""

    run_dir: Path
    meta: RunMeta
    shard: SealedShard

    @property
    def label(self) -> str:
        s = self.meta.shard or {}
        return f"shard {s.get('index')}/{s.get('total')} ({self.run_dir})"


def load_parts(dirs: list[Path]) -> list[Part]:
    if not dirs:
        raise UsageError("merge-runs needs the run directories of the shards")
    parts = []
    for d in dirs:
        sealed = SealedShard(Path(d))
        if not sealed.meta.shard:
            raise MergeRefused("not_a_shard", f"{d} is not a shard (its run.json has no shard): only runs "
                                              "started with --shard K/N can be merged", str(d))
        parts.append(Part(Path(d), sealed.meta, sealed))
    return parts


def check_parts(parts: list[Part]) -> tuple[list[str], dict[str, Part]]:
    """(the plan's units in plan order, each unit's part), after every check that the parts belong together,
    cover the plan once and hold each unit's evidence (every unit's packet and verdict read against its part's
    seal and checked; only the unit's id is kept)."""
    first = parts[0]
    total = first.meta.shard["total"]
    for p in parts[1:]:
        if p.meta.shard.get("plan_sha256") != first.meta.shard.get("plan_sha256"):
            raise MergeRefused("plan_differs", f"{p.label} was planned differently from {first.label} (plan hash "
                               f"{str(p.meta.shard.get('plan_sha256'))[:12]} vs "
                               f"{str(first.meta.shard.get('plan_sha256'))[:12]}): every shard must run the same "
                               "cases, filters, target configuration and timings", str(p.run_dir))
        if input_hashes(p.meta) != input_hashes(first.meta):
            raise MergeRefused("part_differs", f"{p.label} was made from other inputs than {first.label} "
                               f"({input_hashes(p.meta)} vs {input_hashes(first.meta)}); shards of one run share "
                               "them", str(p.run_dir))
        for key in SHARED:
            if getattr(p.meta, key) != getattr(first.meta, key):
                raise MergeRefused("part_differs", f"{p.label} differs from {first.label} in {key}: "
                                   f"{getattr(p.meta, key)!r} vs {getattr(first.meta, key)!r}; shards of one run "
                                   "share it", str(p.run_dir))
    indexes = Counter(p.meta.shard["index"] for p in parts)
    doubled = sorted(k for k, n in indexes.items() if n > 1)
    if doubled:
        twice = [p.label for p in parts if p.meta.shard["index"] in doubled]
        raise MergeRefused("part_doubled", f"shard {', '.join(f'{k}/{total}' for k in doubled)} given more than "
                           f"once: {'; '.join(twice)}")
    missing = sorted(set(range(1, total + 1)) - set(indexes))
    if missing:
        raise MergeRefused("part_missing", f"shard {', '.join(f'{k}/{total}' for k in missing)} missing: the merge "
                           f"needs all {total} parts")
    plan_units = list(first.meta.shard["plan_units"])
    owner: dict[str, Part] = {}
    twice = []
    for p in parts:
        for u in p.meta.units:
            if u in owner:
                twice.append(u)
            owner[u] = p
    if twice:
        raise MergeRefused("unit_doubled", f"unit(s) in more than one shard: {', '.join(sorted(set(twice))[:20])}")
    planned = set(plan_units)
    lacking = [u for u in plan_units if u not in owner]
    extra = sorted(u for u in owner if u not in planned)
    if lacking or extra:
        raise MergeRefused("plan_not_covered", f"the shards do not cover the plan exactly: missing "
                           f"{', '.join(lacking[:20]) or 'none'}; not planned {', '.join(extra[:20]) or 'none'}")
    del planned
    for u in plan_units:
        owner[u].shard.unit_files(u)
    return plan_units, owner


def _unit_names(part: Part, unit_id: str) -> list[str]:
    """The files of a unit its part's seal covers: its packet, its verdict and the traces it kept (check_parts
    has checked them)."""
    run_dir = part.run_dir
    names = (packet_path(run_dir, unit_id).name, verdict_path(run_dir, unit_id).name,
             snapshot_path(run_dir, unit_id).relative_to(run_dir).as_posix())
    return [name for name in names if name in part.shard.sealed]


def input_hashes(meta: RunMeta) -> dict[str, str]:
    """{role: SHA-256} of the inputs a part copied (rundir/inputs.py); where they came from may differ."""
    return {role: rec.sha256 for role, rec in sorted(meta.inputs.items())}


def merged_meta(parts: list[Part], into: Path, plan_units: list[str]) -> RunMeta:
    """The merged run's run.json: the first part's, without its shard, naming each part and its seal."""
    first = min(parts, key=lambda p: p.meta.created_at)
    data = first.meta.to_json()
    data.pop("shard", None)
    data.update(run_id=run_id_of(into), units=plan_units)
    meta = RunMeta.from_json(data)
    meta.baseline_run = None
    baseline = latest_comparable_run(meta.selection_filters, meta.cases_path or Path(""))
    meta.baseline_run = str(baseline) if baseline else None
    meta.extra["merged_from"] = sorted(
        ({"shard": f"{p.meta.shard['index']}/{p.meta.shard['total']}", "run_id": p.meta.run_id,
          "run_dir": str(p.run_dir), "seal_sha256": p.shard.seal_sha256} for p in parts),
        key=lambda m: int(m["shard"].split("/")[0]))
    meta.extra["plan_sha256"] = first.meta.shard["plan_sha256"]
    return meta


def merge(config: TargetConfig, case_set: CaseSet, parts: list[Part], into: Path | None = None) -> Path:
    """Copy every part's units (``load_parts``) into one run directory with its report.md; the caller finishes it."""
    plan_units, owner = check_parts(parts)
    if into is None:
        into = new_run_dir()
    into = Path(into)
    if into.exists():
        refuse_links(into, str(into))
    into.mkdir(parents=True, exist_ok=True)
    meta = merged_meta(parts, into, plan_units)
    existing = into / RUN_FILE
    if existing.exists():
        old = load_run(into)
        if old.extra.get("plan_sha256") != meta.extra["plan_sha256"]:
            raise MergeRefused("into_taken", f"{into} already holds another run ({old.run_id}); merge into a new "
                                             "directory", str(into))
        meta = old
    elif any(into.iterdir()):
        raise MergeRefused("into_taken", f"{into} is not empty; merge into a new or empty directory", str(into))
    with RunLock(into):
        if not existing.exists():
            meta.write(into)
        source = min(parts, key=lambda p: p.meta.created_at)  # the part merged_meta took run.json from
        for rec in meta.inputs.values():  # the run's copies of its inputs, as that part's seal holds them
            write_once(into / rec.file, source.shard.read(rec.file))
        stamp = parse_iso(meta.created_at).strftime("%Y-%m-%d %H:%M:%S UTC")
        ensure_header(into / "report.md", stamp, meta.selection_filters.apply(case_set).disabled_line(),
                      meta.target.get("display_name") or config.display_name)
        for unit_id in plan_units:
            part = owner[unit_id]
            for name in _unit_names(part, unit_id):
                # Read again and checked against the seal as it is copied: these are the verified bytes.
                write_once(into / name, part.shard.read(name), sync_dir=False)
        for folder in (into, into / SNAPSHOT_DIR):  # the copies' names, made durable once
            if folder.is_dir():
                fsync_dir(folder)
        p = plan(into, case_set)
        judged = set(judged_ids(into / "report.md"))
        for unit in p.units:
            ensure_row(into, unit, load_verdict(into, unit.id), load_packet(into, unit.id), judged)
    return into
