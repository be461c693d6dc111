"""Sealing a finished run directory, and detecting any later change to it.

The seal (``seal.json``, written once) lists the SHA-256 of every file of the run at the
end of finishing. ``verify_seal`` names each file changed, removed or added since. Gate
results are the only files expected to arrive after the seal. A symbolic link is never
followed: it is recorded as the link it is, so a file swapped for a link shows as changed.
"""
from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path

from ..base.errors import FrozenArtifactChanged, UsageError
from ..base.fsutil import dumps_json, sha256_bytes, sha256_file, write_once
from .freeze import Drift

SEAL = "seal.json"
IGNORED = (".runner.lock", ".runner.owner.json", ".judging.lock", "*.tmp", SEAL)
LATE = ("gate-*.json", "replay-report.json")


def _files(run_dir: Path) -> dict[str, str]:
    out = {}
    for path in sorted(Path(run_dir).rglob("*")):
        if any(fnmatch.fnmatch(path.name, pat) for pat in IGNORED):
            continue
        rel = path.relative_to(run_dir).as_posix()
        if path.is_symlink():
            out[rel] = "symlink:" + sha256_bytes(os.readlink(path).encode("utf-8", "surrogateescape"))
        elif path.is_file():
            out[rel] = sha256_file(path)
    return out


def seal(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    data = {"schema_version": 1, "files": _files(run_dir)}
    path = run_dir / SEAL
    if path.exists():
        return {"status": "already_sealed", "seal": str(path)}
    write_once(path, dumps_json(data))
    return {"status": "sealed", "seal": str(path), "files": len(data["files"])}


def verify_seal(run_dir: Path) -> Drift:
    run_dir = Path(run_dir)
    path = run_dir / SEAL
    if not path.exists():
        raise UsageError(f"{run_dir} is not sealed (seal.json is written when a run is finished)")
    try:
        sealed = json.loads(path.read_text(encoding="utf-8"))["files"]
        sealed.items()
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FrozenArtifactChanged(f"{path} is not a readable seal ({type(exc).__name__}: {exc}); the run's "
                                    "integrity cannot be shown") from None
    now = _files(run_dir)
    drift = Drift()
    for rel, digest in sealed.items():
        if rel not in now:
            drift.missing.append(rel)
        elif now[rel] != digest:
            drift.changed.append(rel)
    drift.added = sorted(rel for rel in now if rel not in sealed
                         and not any(fnmatch.fnmatch(Path(rel).name, pat) for pat in LATE))
    return drift
