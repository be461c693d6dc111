"""The sealed holdout set: never seen by the normal flow, opened once after a passed gate.

The holdout cases live in their own file marked ``holdout: true``. Loading that file is
refused unless the ledger (``catalogs/holdout-ledger.json``) records an open of exactly
that content for the run that asks. ``open_holdout`` is allowed only when the
development run's gate result passed under the current freeze; it records the open
(time, freeze id and hash, the development run, the holdout run) and creates the one
holdout run. A second open is refused. Hashing the file for the freeze audit is not an
open.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..base.clock import iso, utc_now
from ..base.errors import FrozenArtifactChanged, HoldoutSealed
from ..base.fsutil import sha256_file
from ..base.paths import bundle_root
from ..config.cases import CaseSet, load_cases_for
from ..config.target import TargetConfig
from .freeze import load_manifest, verify
from .ledger import append_entry, holdout_result_exists, ledger_entries, signed_entries
from .seal import SEAL, attestation_problem, require_intact


def is_holdout_file(path: Path) -> bool:
    """True when the file declares ``holdout: true`` (read as text; this is no open).

    A file that cannot be read as YAML is no holdout file; loading it reports why.
    """
    from ..base.errors import ConfigError
    from ..base.yamlio import load_yaml

    try:
        data, _ = load_yaml(Path(path))
    except ConfigError:
        return False
    return isinstance(data, dict) and data.get("holdout") is True


def open_for_run(run_dir: Path, cases_path: Path, root: Path | None = None) -> dict | None:
    """The ledger entry that lets ``run_dir`` use the holdout file at ``cases_path``."""
    digest = sha256_file(cases_path)
    for entry in signed_entries(root):
        if entry.get("holdout_sha256") == digest and Path(entry.get("holdout_run", "")).resolve() == Path(run_dir).resolve():
            return entry
    return None


def load_holdout_cases(config: TargetConfig, run_dir: Path, cases_path: Path, root: Path | None = None) -> CaseSet:
    """The holdout cases, for the one holdout run the ledger names; refused for anything else."""
    require_open(run_dir, cases_path, root)
    return load_cases_for(config, cases_path, allow_holdout=True)


def require_open(run_dir: Path | None, cases_path: Path, root: Path | None = None) -> dict:
    if run_dir is not None:
        entry = open_for_run(run_dir, cases_path, root)
        if entry is not None:
            return entry
    raise HoldoutSealed(
        f"{cases_path} is the sealed holdout set: it is never planned, run, listed or shown by the normal flow. "
        "It opens once, through freeze_audit.py open-holdout, after the development gate passed.")


def sealed_gate(dev_run: Path) -> dict:
    """The development run's gate result, when the run's seal verifies and the gate file is the one the harness
    attested to that seal (signed, with OBAI_E2E_SEAL_KEY set). A run that is not sealed is refused
    (HoldoutSealed); a sealed run with any difference, or a gate file the harness did not attest, is refused
    naming the file (FrozenArtifactChanged, exit 6), before anything of it is read."""
    gate_file = dev_run / "gate-development.json"
    if not gate_file.exists() and not gate_file.is_symlink():
        raise HoldoutSealed(f"no development gate result in {dev_run} (run: freeze_audit.py gate --run-dir {dev_run}); the holdout stays sealed")
    if not (dev_run / SEAL).is_file():
        raise HoldoutSealed(f"the development run {dev_run} is not a sealed run (no {SEAL}); the holdout stays sealed")
    require_intact(dev_run, "open-holdout")
    problem = attestation_problem(dev_run, gate_file.name)
    if problem is not None:
        raise FrozenArtifactChanged(f"{gate_file} is {problem}: it is not the gate result the harness wrote and "
                                    f"attested to this run's seal (re-gate with: freeze_audit.py gate --run-dir "
                                    f"{dev_run}); the holdout stays sealed")
    return json.loads(gate_file.read_text(encoding="utf-8"))


def open_holdout(config: TargetConfig, dev_run: Path, holdout_cases: Path, *, create_run, root: Path | None = None) -> dict:
    """Open the holdout once: check the gate and the freeze, record the open, create the holdout run."""
    root = root or bundle_root()
    manifest = load_manifest(root)
    if manifest is None:
        raise HoldoutSealed("nothing is frozen: freeze first (freeze_audit.py freeze), then run and gate the development set")
    drift = verify(config, root, manifest)
    if not drift.clean:
        raise FrozenArtifactChanged(f"the freeze does not verify ({drift.describe()}); the holdout stays sealed")
    gate = sealed_gate(Path(dev_run))
    if gate.get("freeze_hash") != manifest["freeze_hash"]:
        raise HoldoutSealed("the development gate was evaluated under another freeze; re-run and re-gate the development set")
    if not gate.get("passed"):
        failed = ", ".join(c["id"] for c in gate.get("conditions", []) if c.get("status") == "fail")
        raise HoldoutSealed(f"the development gate failed ({failed}); the protocol stops here and the holdout stays sealed")
    digest = sha256_file(holdout_cases)
    for entry in signed_entries(root):
        if entry.get("holdout_sha256") == digest:
            raise HoldoutSealed(
                f"the holdout set was already opened on {entry['opened_at']} (freeze {entry['freeze_id']}, run "
                f"{entry['holdout_run']}); it can be opened only once")
    run_dir = create_run()
    entry = {
        "freeze_id": manifest["freeze_id"],
        "freeze_hash": manifest["freeze_hash"],
        "holdout_file": str(Path(holdout_cases).resolve().relative_to(root.resolve()))
        if Path(holdout_cases).resolve().is_relative_to(root.resolve()) else str(holdout_cases),
        "holdout_sha256": digest,
        "opened_at": iso(utc_now()),
        "dev_run": str(Path(dev_run).resolve()),
        "holdout_run": str(Path(run_dir).resolve()),
        "gate_sha256": sha256_file(Path(dev_run) / "gate-development.json"),
    }
    append_entry(entry, root)
    return entry


def status(root: Path | None = None) -> dict:
    entries = ledger_entries(root)
    if not entries:
        return {"state": "sealed", "opens": 0}
    last = entries[-1]
    return {"state": "result recorded" if holdout_result_exists(last) else "opened", "opens": len(entries),
            "last_open": last}
