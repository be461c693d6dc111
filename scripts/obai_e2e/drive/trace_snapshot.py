"""A unit's traces as the backend held them: ``<run_dir>/traces/<unit>.json``, kept with the run.

Enters: each resolved turn's trace and spans, as ``trace/resolve.fetch`` read them (redacted
and, for korpus cases, pseudonymised like the packet). Leaves: :class:`TraceSnapshot` per
turn, which the finish step renders into the run's own trace pages, so that a report's
trace links need no trace store: not after the store restarts, not in a CI artifact.

Written before the packet (the packet is what makes a unit driven), replaced if the unit
is driven again before its packet exists; long string values and values nested deeper than
``jsonwalk.MAX_DEPTH`` levels are cut with a visible marker to bound the file. The packet keeps the
snapshot's SHA-256 (``evidence``), so once the unit is driven the snapshot is its evidence as read: every
reader checks it against that hash.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ConfigError, FrozenArtifactChanged
from ..base.fsutil import atomic_write_text, dumps_json, sha256_bytes
from ..base.jsonwalk import rebuild
from ..base.record import Record
from ..config.units import check_unit_id
from .packet_record import TRACES_DIR, Evidence, packet_path

SNAPSHOT_DIR = TRACES_DIR
VALUE_CHARS = 50_000
MAX_SPANS = 5_000
ROLES = ("initial", "followup")


@dataclass
class TraceSnapshot(Record):
    """One turn's trace and its spans (``role``: initial or followup)."""

    role: str
    trace: dict[str, Any]
    spans: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    total_spans: int = 0


def snapshot_path(run_dir: Path, unit_id: str) -> Path:
    return Path(run_dir) / SNAPSHOT_DIR / f"{check_unit_id(unit_id)}.json"


def _cut_text(value: str) -> str:
    if len(value) > VALUE_CHARS:
        return value[:VALUE_CHARS] + f" … [cut: {len(value) - VALUE_CHARS} more characters]"
    return value


def _cut(value: Any) -> Any:
    """``value`` with long strings cut and nesting past ``jsonwalk.MAX_DEPTH`` levels replaced, each marked."""
    return rebuild(value, _cut_text)


def snapshot(role: str, trace: dict, spans: list[dict], complete: bool) -> dict:
    """The JSON form of one turn's snapshot, values cut and spans capped, ordered by start time."""
    ordered = sorted(spans, key=lambda s: (str(s.get("start_time") or ""), str(s.get("id") or "")))
    return TraceSnapshot(role=role, trace=_cut(trace), spans=_cut(ordered[:MAX_SPANS]), complete=complete,
                         total_spans=len(spans)).to_json()


def write_snapshots(run_dir: Path, unit_id: str, turns: list[dict]) -> Evidence | None:
    """Write the unit's snapshots (their JSON forms, already redacted); the packet's record of them, None when
    there is none. Refused once the unit's packet exists: then the snapshot is evidence, never rewritten."""
    if not turns:
        return None
    path = snapshot_path(run_dir, unit_id)
    if packet_path(run_dir, unit_id).exists():
        raise FrozenArtifactChanged(f"{path}: the unit {unit_id} is driven already; its kept trace is not written again")
    path.parent.mkdir(exist_ok=True)
    text = dumps_json({"unit_id": unit_id, "turns": turns})
    atomic_write_text(path, text)
    return Evidence(file=path.relative_to(run_dir).as_posix(), sha256=sha256_bytes(text.encode("utf-8")))


def any_kept(run_dir: Path) -> bool:
    """Whether the run kept any unit's trace yet."""
    return any(Path(run_dir, SNAPSHOT_DIR).glob("*.json"))


def load_snapshots(run_dir: Path, unit_id: str, evidence: Evidence | None = None) -> list[TraceSnapshot]:
    """The unit's snapshots, initial turn first; [] when the unit has none.

    ``evidence``: the packet's record of the snapshot (read from the packet when not given); bytes that differ
    from it are refused (FrozenArtifactChanged), never shown as the unit's trace."""
    path = snapshot_path(run_dir, unit_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"{path}: not a readable trace snapshot ({exc})") from None
    kept = evidence or _packet_evidence(run_dir, unit_id)
    if kept is not None and sha256_bytes(raw) != kept.sha256:
        raise FrozenArtifactChanged(f"{path}: the unit's kept trace differs from the one its packet recorded when it "
                                    f"was driven (SHA-256 now {sha256_bytes(raw)[:12]}…, recorded {kept.sha256[:12]}…)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path}: not a readable trace snapshot ({exc})") from None
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list):
        raise ConfigError(f"{path}: field /turns: expected a list of the unit's traces")
    out = [TraceSnapshot.from_json(t, source=f"{path}: turn {i}") for i, t in enumerate(turns)]
    return sorted(out, key=lambda s: ROLES.index(s.role) if s.role in ROLES else len(ROLES))


def _packet_evidence(run_dir: Path, unit_id: str) -> Evidence | None:
    """The snapshot's record in the unit's packet (None: no packet yet, or one from before it was kept)."""
    try:
        data = json.loads(packet_path(run_dir, unit_id).read_bytes())
    except (OSError, ValueError):
        return None
    kept = data.get("evidence") if isinstance(data, dict) else None
    return Evidence.from_json(kept, source=str(packet_path(run_dir, unit_id))) if isinstance(kept, dict) else None
