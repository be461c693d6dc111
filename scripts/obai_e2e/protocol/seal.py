"""Sealing a finished run directory, and detecting any later change to it.

The seal (``seal.json``, written once) lists the SHA-256 of every file of the run at the
end of finishing. ``verify_seal`` names each file changed, removed or added since. Gate
results are the only files that decide something and arrive after the seal: each carries an
attestation (:func:`attest`) that ties its bytes to this seal and, with the key, signs them, so a
gate result written by hand or edited later shows as added or changed. A symbolic link is never
followed: it is recorded as the link it is, so a file swapped for a link shows as changed.

A list of checksums shows accidents, not forgeries: whoever can edit a file can write the
seal again. With ``OBAI_E2E_SEAL_KEY`` set (a secret shared by the jobs that seal and the
job that merges, e.g. a CI secret), the seal also carries an HMAC-SHA256 of its list, which
only a holder of the key can compute; ``signature`` says whether a seal's HMAC is
there and right. The key is never written anywhere, nor passed to the agent under test.
"""
from __future__ import annotations

import bisect
import fnmatch
import hashlib
import hmac
import json
import os
from pathlib import Path

from ..base.errors import FrozenArtifactChanged, UsageError
from ..base.fsutil import sha256_bytes, sha256_file, write_once_from
from ..base.pii import SALT_FILE
from ..base.safe_read import UnsafeFile, read_bytes
from ..base.seal_key import KEY_ENV, seal_key
from .freeze import Drift

SEAL = "seal.json"
MAC_ALG = "hmac-sha256"
# Not evidence: locks, temporary files, the seal itself, and the run's pseudonym salt (a secret of the
# machine that drove the run: no artifact needs it, and GitHub's artifact upload leaves out dot files).
IGNORED = (".runner.lock", ".runner.owner.json", ".judging.lock", "*.tmp", SEAL, SALT_FILE)
LATE = ("gate-*.json", "replay-report.json")
ATTESTED = ("gate-*.json",)   # late files that decide something: each must carry its attestation
ATTESTATION = "attestation"
LATE_MAX_BYTES = 4 << 20


def _ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pat) for pat in IGNORED)


def _names(run_dir: Path) -> list[str]:
    """The run's files (and symbolic links) a seal lists, by path relative to it, in sorted order."""
    out = []
    stack = [Path(run_dir)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif not _ignored(entry.name) and (entry.is_symlink() or entry.is_file(follow_symlinks=False)):
                    out.append(Path(entry.path).relative_to(run_dir).as_posix())
    out.sort()
    return out


def _digest(run_dir: Path, rel: str) -> str:
    path = Path(run_dir) / rel
    if path.is_symlink():
        return "symlink:" + sha256_bytes(os.readlink(path).encode("utf-8", "surrogateescape"))
    return sha256_file(path)


def _files(run_dir: Path) -> dict[str, str]:
    return {rel: _digest(run_dir, rel) for rel in _names(run_dir)}


def _canonical(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _mac(files: dict, key: bytes) -> str:
    return hmac.new(key, _canonical({"schema_version": 1, "files": files}), hashlib.sha256).hexdigest()


def attest(run_dir: Path, body: dict) -> dict:
    """``body`` with its attestation: the sealed run's seal hash and the body's hash, signed with the key when
    one is set. Only a sealed run takes a file that decides something."""
    seal_path = Path(run_dir) / SEAL
    if not seal_path.is_file() or seal_path.is_symlink():
        raise UsageError(f"{run_dir} is not sealed (seal.json is written when a run is finished): finish the run "
                         "before evaluating a gate on it")
    bound: dict = {"run_seal_sha256": sha256_file(seal_path), "body_sha256": sha256_bytes(_canonical(body))}
    key = seal_key()
    if key is not None:
        bound["mac"] = {"alg": MAC_ALG, "value": hmac.new(key, _canonical(bound), hashlib.sha256).hexdigest()}
    return {**body, ATTESTATION: bound}


def attestation_problem(run_dir: Path, rel: str) -> str | None:
    """Why the late file ``rel`` of a sealed run is not the harness's own (None when it is).

    ``unsealed``: no attestation, or one for another seal (written by hand, or copied from another run);
    ``changed``: its bytes are not those attested; ``unsigned`` / ``forged``: with the key set, its attestation
    carries no signature or a wrong one."""
    path = Path(run_dir) / rel
    try:
        data = json.loads(read_bytes(path, limit=LATE_MAX_BYTES, what="the late file"))
        bound = data.pop(ATTESTATION)
        mac = bound.get("mac")
        bound_without_mac = {k: v for k, v in bound.items() if k != "mac"}
        if bound.get("run_seal_sha256") != sha256_file(Path(run_dir) / SEAL):
            return "unsealed"
        if bound.get("body_sha256") != sha256_bytes(_canonical(data)):
            return "changed"
    except (OSError, UnsafeFile, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return "unsealed"
    key = seal_key()
    if key is None:
        return None
    if not isinstance(mac, dict) or mac.get("alg") != MAC_ALG or not isinstance(mac.get("value"), str):
        return "unsigned"
    expected = hmac.new(key, _canonical(bound_without_mac), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(mac["value"], expected) else "forged"


def seal(run_dir: Path) -> dict:
    """Write seal.json once: every file's SHA-256, hashed and written a file at a time in sorted order (the
    bytes dumps_json gives the whole document), signed with the key when one is set."""
    run_dir = Path(run_dir)
    path = run_dir / SEAL
    if path.exists():
        return {"status": "already_sealed", "seal": str(path)}
    key = seal_key()
    names = _names(run_dir)
    write_once_from(path, lambda fh: _write_seal(fh, run_dir, names, key))
    return {"status": "sealed", "seal": str(path), "files": len(names), "signed": key is not None}


def _write_seal(fh, run_dir: Path, names: list[str], key: bytes | None) -> None:
    mac = hmac.new(key, b'{"files":{', hashlib.sha256) if key is not None else None
    fh.write(b'{\n  "files": {')
    for n, rel in enumerate(names):
        digest = _digest(run_dir, rel)
        fh.write(((",\n    " if n else "\n    ") + json.dumps(rel, ensure_ascii=False) + ": " +
                  json.dumps(digest)).encode("utf-8"))
        if mac is not None:
            mac.update(("," if n else "").encode() + json.dumps(rel, ensure_ascii=True).encode("ascii") + b":" +
                       json.dumps(digest).encode("ascii"))
    fh.write(b"\n  }," if names else b"},")
    if mac is not None:
        mac.update(b'},"schema_version":1}')
        fh.write(("\n" + '  "mac": ' + json.dumps({"alg": MAC_ALG, "value": mac.hexdigest()}, indent=2, sort_keys=True)
                  .replace("\n", "\n  ") + ",").encode("utf-8"))
    fh.write(b'\n  "schema_version": 1\n}\n')


def signature(sealed: dict) -> tuple[str, str | None]:
    """(what to report of a seal's signature, the problem when it does not stand under the key set here).

    With OBAI_E2E_SEAL_KEY set: ``valid``, or the problem ``unsigned`` / ``forged`` as both. Without
    it nothing can be checked: ``not checked …`` for a signed seal, ``none`` for an unsigned one.
    """
    key = seal_key()
    mac = sealed.get("mac")
    if key is None:
        return (f"not checked ({KEY_ENV} is not set)" if isinstance(mac, dict) else "none"), None
    if not isinstance(mac, dict) or mac.get("alg") != MAC_ALG or not isinstance(mac.get("value"), str):
        return "unsigned", "unsigned"
    files = sealed.get("files")
    if not isinstance(files, dict) or not hmac.compare_digest(mac["value"], _mac(files, key)):
        return "forged", "forged"
    return "valid", None


def describe_signature(problem: str, where: Path) -> str:
    if problem == "unsigned":
        return (f"{where} carries no signature while {KEY_ENV} is set here: it was sealed without the key, or its "
                "signature was removed; only a seal made with the key is evidence")
    return (f"{where} has a signature that does not match its list of files under the key in {KEY_ENV}: it was "
            "sealed with another key, or written again by someone without the key")


def require_intact(run_dir: Path, reader: str) -> dict:
    """The run's seal, when every file of the sealed run is as sealed, every late file carries the harness's
    attestation to this seal, and (with OBAI_E2E_SEAL_KEY set) the seal is signed with the key; otherwise
    :class:`FrozenArtifactChanged` naming the files, before ``reader`` (what is about to read the run) reads any."""
    drift = verify_seal(run_dir)
    path = Path(run_dir) / SEAL
    try:
        sealed = json.loads(read_bytes(path, limit=LATE_MAX_BYTES * 16, what="the seal"))
    except (OSError, UnsafeFile, ValueError) as exc:
        raise FrozenArtifactChanged(f"{path} is not a readable seal ({exc}); {reader} reads nothing from "
                                    f"{run_dir}") from None
    _, problem = signature(sealed)
    if problem is not None:
        raise FrozenArtifactChanged(f"{describe_signature(problem, path)}; {reader} reads nothing from {run_dir}")
    if not drift.clean:
        raise FrozenArtifactChanged(f"{run_dir} changed since it was sealed ({drift.describe()}); {reader} reads "
                                    "nothing from it (freeze_audit.py verify --run-dir shows the same)")
    return sealed


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
    now = _names(run_dir)
    drift = Drift()
    for rel, digest in sealed.items():
        if _ignored(Path(rel).name):
            continue  # listed by an older seal (the salt was once sealed)
        if not _has(now, rel):
            drift.missing.append(rel)
        elif _digest(run_dir, rel) != digest:
            drift.changed.append(rel)
    for rel in now:
        if rel in sealed:
            continue
        name = Path(rel).name
        if not any(fnmatch.fnmatch(name, pat) for pat in LATE):
            drift.added.append(rel)
        elif any(fnmatch.fnmatch(name, pat) for pat in ATTESTED):
            problem = attestation_problem(run_dir, rel)
            if problem == "changed":
                drift.changed.append(rel)
            elif problem is not None:  # written by hand, for another seal, or not signed with the key set here
                drift.added.append(f"{rel} ({problem})")
    return drift


def _has(names: list[str], rel: str) -> bool:
    """Whether the sorted ``names`` hold ``rel``."""
    at = bisect.bisect_left(names, rel)
    return at < len(names) and names[at] == rel
