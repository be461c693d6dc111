"""Where a judging round lives in the run directory, and reading it back.

``D/judging/<round>/`` holds ``round.json`` (written last: its presence marks a
complete generation), ``mapping.json`` (opaque packet id → unit id, or → fixed calibration
item with its gold choices; never shown to a judge), ``packets/<packet_id>.json``,
``bundle.md``, ``responses/<judge>.json``, ``aggregate.json`` and ``replay-report.json``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...base.errors import FrozenArtifactChanged, UsageError
from ...base.fsutil import sha256_file

ROUND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
JUDGE_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


def check_round(name: str) -> str:
    if not isinstance(name, str) or not ROUND_NAME.match(name):
        raise UsageError(f"invalid round name {name!r}: letters, digits, '_' or '-', at most 32 characters")
    return name


def check_judge(label: str) -> str:
    if not isinstance(label, str) or not JUDGE_LABEL.match(label):
        raise UsageError(f"invalid judge label {label!r}: letters, digits, '_' or '-', at most 32 characters")
    return label


def judging_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "judging"


def round_dir(run_dir: Path, name: str) -> Path:
    return judging_dir(run_dir) / check_round(name)


@dataclass
class Round:
    """A generated round: its manifest, its packets (the judges' contexts) and the id maps: packet id →
    unit id for the live packets (``mapping``), packet id → fixed item and its gold choices (``fixed``)."""

    dir: Path
    manifest: dict
    packets: dict[str, dict]
    mapping: dict[str, str]
    fixed: dict[str, dict] = field(default_factory=dict)
    calibration: dict | None = None  # the calibration catalog the fixed items came from

    def live_packets(self) -> list[str]:
        """Packet ids of the units (not the fixed items), by unit id."""
        return sorted(self.mapping, key=lambda p: (self.mapping[p], p))

    @property
    def name(self) -> str:
        return self.manifest["round"]

    @property
    def panel_size(self) -> int:
        return int(self.manifest["panel_size"])

    def responses_dir(self) -> Path:
        return self.dir / "responses"

    def response_path(self, judge: str) -> Path:
        return self.responses_dir() / f"{check_judge(judge)}.json"

    def response_files(self) -> list[Path]:
        d = self.responses_dir()
        return sorted(d.glob("*.json")) if d.exists() else []

    @property
    def aggregate_path(self) -> Path:
        return self.dir / "aggregate.json"


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} is missing from the round") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); the round is damaged") from None


def load_round(run_dir: Path, name: str, *, verify: bool = True) -> Round:
    """Read a complete round; with ``verify``, refuse packets that changed since generation."""
    d = round_dir(run_dir, name)
    manifest_path = d / "round.json"
    if not manifest_path.exists():
        hint = " (its generation did not finish; generate a new round)" if d.exists() else ""
        raise UsageError(f"round {name!r} of {run_dir} has not been generated{hint}; run judge-packets first")
    manifest = _read_json(manifest_path)
    id_map = _read_json(d / "mapping.json")
    packets = {}
    for pid, digest in manifest["packets"].items():
        path = d / "packets" / f"{pid}.json"
        if verify and path.exists() and sha256_file(path) != digest:
            raise FrozenArtifactChanged(f"{path} changed since round {name!r} was generated "
                                        f"(sha256 {sha256_file(path)[:12]}…, recorded {digest[:12]}…)")
        packets[pid] = _read_json(path)
    entries = id_map["packets"]
    return Round(d, manifest, packets, {pid: m["unit_id"] for pid, m in entries.items() if "unit_id" in m},
                 {pid: m for pid, m in entries.items() if "fixed_item" in m}, id_map.get("calibration"))


def round_names(run_dir: Path) -> list[str]:
    """Generated rounds, oldest first (by generation time, then name)."""
    d = judging_dir(run_dir)
    if not d.exists():
        return []
    found = []
    for sub in d.iterdir():
        m = sub / "round.json"
        if sub.is_dir() and m.exists():
            found.append((json.loads(m.read_text(encoding="utf-8")).get("created_at", ""), sub.name))
    return [name for _, name in sorted(found)]


def judging_lock(run_dir: Path, timeout_s: float = 30):
    """One writer at a time under ``D/judging`` (generation, storing, aggregation)."""
    from filelock import FileLock

    d = judging_dir(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    return FileLock(str(d / ".judging.lock"), timeout=timeout_s)
