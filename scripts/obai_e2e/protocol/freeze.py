"""The freeze audit: proof that what judged a run is what was committed before it.

``freeze`` writes a manifest (``catalogs/freeze.json``) with the SHA-256 of every frozen
artifact — cases (development and holdout), the sampling plan, the rubric-relevant part
of the target configuration, catalogs and gate definitions, SKILL.md and its references
(the judge prompt among them), the JSON Schemas, and named baseline results — plus the
git commit. ``verify`` recomputes every hash and names each changed, missing or added
file. Reading files to hash them never counts as opening the holdout.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..base.clock import iso, utc_now
from ..base.errors import FrozenArtifactChanged, HoldoutSealed, UsageError
from ..base.fsutil import atomic_write_json, sha256_file
from ..base.paths import bundle_root
from ..config.target import TargetConfig
from .ledger import LEDGER, holdout_result_exists, ledger_entries

MANIFEST = "catalogs/freeze.json"
MANIFEST_VERSION = 1

# Globs relative to the bundle root; the manifest and the ledger are state, not artifacts.
FROZEN_GLOBS = (
    "cases/*.yaml",
    "catalogs/*.json",
    "catalogs/*.yaml",
    "SKILL.md",
    "references/**/*.md",
    "schemas/*.json",
)
EXCLUDED = {MANIFEST, LEDGER, "cases/target.yaml"}
# The parts of the target configuration that change what a rule decides.
TARGET_RUBRIC_KEYS = ("vocabulary", "rubric", "async_jobs", "correlation")
TARGET_VIRTUAL = "cases/target.yaml#rubric"


def _rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def frozen_files(root: Path | None = None) -> list[str]:
    root = root or bundle_root()
    found: set[str] = set()
    for pattern in FROZEN_GLOBS:
        for path in root.glob(pattern):
            if path.is_file():
                rel = _rel(path, root)
                if rel not in EXCLUDED:
                    found.add(rel)
    return sorted(found)


def target_rubric_hash(config: TargetConfig) -> str:
    part = {k: config.raw.get(k) for k in TARGET_RUBRIC_KEYS}
    part["refusal_exit_code"] = config.raw.get("target", {}).get("refusal_exit_code", 1)
    return hashlib.sha256(json.dumps(part, sort_keys=True).encode()).hexdigest()


def _freeze_hash(files: dict, virtual: dict, baselines: dict) -> str:
    blob = json.dumps({"files": files, "virtual": virtual, "baselines": baselines}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class Drift:
    """What differs between the manifest and the bundle now."""

    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.added)

    def to_json(self) -> dict:
        return {"changed": self.changed, "missing": self.missing, "added": self.added}

    def describe(self) -> str:
        parts = []
        for label, names in (("changed", self.changed), ("missing", self.missing), ("added", self.added)):
            if names:
                parts.append(f"{label}: {', '.join(names)}")
        return "; ".join(parts)


def manifest_path(root: Path | None = None) -> Path:
    return (root or bundle_root()) / MANIFEST


def load_manifest(root: Path | None = None) -> dict | None:
    path = manifest_path(root)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FrozenArtifactChanged(f"{path}: the freeze manifest is not valid JSON ({exc.msg}); restore it from git") from None


def compute(config: TargetConfig, baselines: list[Path] = (), root: Path | None = None) -> dict:
    root = root or bundle_root()
    files = {rel: sha256_file(root / rel) for rel in frozen_files(root)}
    virtual = {TARGET_VIRTUAL: target_rubric_hash(config)}
    base = {}
    for path in baselines:
        p = Path(path)
        if p.is_dir():
            p = p / "results.json"
        if not p.exists():
            raise UsageError(f"baseline {p} does not exist")
        key = _rel(p, root) if p.resolve().is_relative_to(root.resolve()) else str(p.resolve())
        base[key] = sha256_file(p)
    return {"files": files, "virtual": virtual, "baselines": base}


def verify(config: TargetConfig, root: Path | None = None, manifest: dict | None = None) -> Drift:
    root = root or bundle_root()
    manifest = manifest if manifest is not None else load_manifest(root)
    if manifest is None:
        raise UsageError("nothing is frozen yet (run: freeze_audit.py freeze)")
    drift = Drift()
    now_files = set(frozen_files(root))
    for rel, digest in sorted(manifest["files"].items()):
        path = root / rel
        if not path.exists():
            drift.missing.append(rel)
        elif sha256_file(path) != digest:
            drift.changed.append(rel)
    drift.added = sorted(now_files - set(manifest["files"]))
    if manifest.get("virtual", {}).get(TARGET_VIRTUAL) != target_rubric_hash(config):
        drift.changed.append(TARGET_VIRTUAL)
    for key, digest in sorted(manifest.get("baselines", {}).items()):
        path = Path(key) if os.path.isabs(key) else root / key
        if not path.exists():
            drift.missing.append(key)
        elif sha256_file(path) != digest:
            drift.changed.append(key)
    return drift


def freeze(config: TargetConfig, *, freeze_id: str | None = None, reason: str = "", baselines: list[Path] = (),
           root: Path | None = None, git_commit: str | None = None) -> dict:
    """Write the manifest; refused when a holdout result exists for the same freeze id and content changed."""

    root = root or bundle_root()
    old = load_manifest(root)
    content = compute(config, baselines, root)
    new_hash = _freeze_hash(content["files"], content["virtual"], content["baselines"])
    if freeze_id is None:
        freeze_id = old["freeze_id"] if old else "F1"
    if old and old.get("freeze_id") == freeze_id and old.get("freeze_hash") != new_hash:
        for entry in ledger_entries(root):
            if entry.get("freeze_id") == freeze_id and holdout_result_exists(entry):
                raise HoldoutSealed(
                    f"freeze {freeze_id} has a holdout result ({entry.get('holdout_run')}); its cases, prompts, "
                    f"judges and gates can no longer change. Changed now: {verify(config, root, old).describe()}. "
                    "Start a new protocol with a new freeze id and a new holdout set.")
    if old and old.get("freeze_hash") == new_hash and old.get("freeze_id") == freeze_id:
        return {**old, "status": "unchanged"}
    manifest = {
        "schema_version": MANIFEST_VERSION,
        "freeze_id": freeze_id,
        "created_at": iso(utc_now()),
        "git_commit": git_commit,
        "reason": reason,
        **content,
        "freeze_hash": new_hash,
    }
    atomic_write_json(manifest_path(root), manifest)
    return {**manifest, "status": "frozen"}


def current_freeze_hash(root: Path | None = None) -> str | None:
    m = load_manifest(root)
    return m.get("freeze_hash") if m else None


def preflight_check(config: TargetConfig, root: Path | None = None):
    """Preflight's ``freeze`` step: says so when nothing is frozen, else verifies and refuses on drift."""
    def check() -> str:
        if load_manifest(root) is None:
            return "nothing is frozen (no freeze manifest): nothing to verify"
        drift = verify(config, root)
        if not drift.clean:
            raise FrozenArtifactChanged(
                f"frozen artifacts drifted since the freeze ({drift.describe()}); a run now would not be evidence. "
                "Undo the change, or re-freeze on purpose: freeze_audit.py freeze --reason '…'")
        m = load_manifest(root)
        return f"freeze {m['freeze_id']} verified ({len(m['files'])} files)"
    return check
