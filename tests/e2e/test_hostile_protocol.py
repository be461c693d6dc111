"""Hostile protocol files: a gate result or a holdout open that the harness did not write decides nothing.

A gate result arrives after its run's seal, so the seal's file list cannot hold it; each carries an
attestation instead (the seal's hash, its own hash and, with OBAI_E2E_SEAL_KEY, a signature). A forger
who can write into a sealed run adds a gate result by hand, edits one, copies one from another run or
re-attests one without the key; a forger who can write the bundle adds an open to the holdout ledger.
Each is detected by ``freeze-audit verify`` and refused by the holdout, naming the file (exit 6). On stored data,
no agent driven.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from obai_e2e.base.errors import FrozenArtifactChanged, HoldoutSealed
from obai_e2e.config.target import load_target_config
from obai_e2e.protocol import freeze
from obai_e2e.protocol.holdout import open_holdout, require_open
from obai_e2e.protocol.ledger import ledger_path
from obai_e2e.protocol.seal import KEY_ENV, attest, seal, verify_seal
from bundle_copy import bundle_copy

from .conftest import obai_json

KEY = "the-ci-secret-that-signs-seals-0123456789"


@pytest.fixture
def home(tmp_path, monkeypatch):
    root = bundle_copy(tmp_path / "bundle")
    (root / "catalogs" / "freeze.json").unlink(missing_ok=True)
    ledger_path(root).unlink(missing_ok=True)
    monkeypatch.setenv("OBAI_E2E_HOME", str(root))
    monkeypatch.setenv("OBAI_E2E_TARGET", str(root / "cases" / "target.yaml"))
    monkeypatch.setenv(KEY_ENV, KEY)
    return root


def sealed_dev_run(home: Path, name: str = "dev") -> Path:
    run = home.parent / "runs" / name
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({"run": {"run_id": name}, "units": []}))
    (run / "MD1.verdict.json").write_text('{"verdict": "pass"}\n')
    seal(run)
    return run


def gate_body(passed: bool = True) -> dict:
    return {"schema_version": 1, "gate": "development", "run_id": "dev", "passed": passed,
            "freeze_hash": freeze.current_freeze_hash(), "conditions": []}


def opened(home: Path, dev: Path) -> dict:
    config = load_target_config(home / "cases" / "target.yaml")
    target = home.parent / "runs" / "holdout"
    return open_holdout(config, dev, home / "cases" / "holdout.yaml", create_run=lambda: target, root=home)


def verify_cli(run: Path) -> tuple[int, dict]:
    code, out, _ = obai_json("freeze-audit", "verify", "--run-dir", str(run), env=dict(os.environ))
    return code, out


@pytest.fixture
def frozen_home(home):
    freeze.freeze(load_target_config(home / "cases" / "target.yaml"), freeze_id="F1", root=home)
    return home


def test_a_hand_written_passed_gate_is_detected_and_opens_nothing(frozen_home):
    dev = sealed_dev_run(frozen_home)
    (dev / "gate-development.json").write_text(json.dumps(gate_body()))
    code, out = verify_cli(dev)
    assert code == 6 and not out["clean"] and out["added"] == ["gate-development.json (unsealed)"]
    with pytest.raises(FrozenArtifactChanged, match="unsealed"):
        opened(frozen_home, dev)
    assert not ledger_path(frozen_home).exists()


def test_an_edited_a_copied_and_an_unsigned_gate_are_each_refused(frozen_home, monkeypatch):
    dev = sealed_dev_run(frozen_home)
    gate = dev / "gate-development.json"
    failed = attest(dev, gate_body(passed=False))
    gate.write_text(json.dumps({**failed, "passed": True}))           # the failed gate, flipped
    assert verify_seal(dev).changed == ["gate-development.json"]
    with pytest.raises(FrozenArtifactChanged, match="changed"):
        opened(frozen_home, dev)

    other = sealed_dev_run(frozen_home, "another-run")           # a passed gate of another run
    gate.write_text(json.dumps(attest(other, gate_body())))
    with pytest.raises(FrozenArtifactChanged, match="unsealed"):
        opened(frozen_home, dev)

    monkeypatch.delenv(KEY_ENV)                                        # attested by a forger without the key
    gate.write_text(json.dumps(attest(dev, gate_body())))
    monkeypatch.setenv(KEY_ENV, KEY)
    assert verify_seal(dev).added == ["gate-development.json (unsigned)"]
    with pytest.raises(FrozenArtifactChanged, match="unsigned"):
        opened(frozen_home, dev)


def test_the_harness_own_gate_opens_the_holdout_once_and_a_forged_ledger_opens_nothing(frozen_home):
    dev = sealed_dev_run(frozen_home)
    (dev / "gate-development.json").write_text(json.dumps(attest(dev, gate_body())))
    assert verify_cli(dev)[0] == 0
    entry = opened(frozen_home, dev)
    holdout_cases = frozen_home / "cases" / "holdout.yaml"
    assert require_open(Path(entry["holdout_run"]), holdout_cases, root=frozen_home) == entry

    # An open of another run written into the ledger by hand (the signature cannot be made without the key).
    ledger = json.loads(ledger_path(frozen_home).read_text())
    ledger["opens"].append({**entry, "holdout_run": str(frozen_home.parent / "runs" / "planted")})
    ledger_path(frozen_home).write_text(json.dumps(ledger))
    with pytest.raises(HoldoutSealed, match="not signed with the key"):
        require_open(frozen_home.parent / "runs" / "planted", holdout_cases, root=frozen_home)
    with pytest.raises(HoldoutSealed, match="not signed with the key"):
        require_open(Path(entry["holdout_run"]), holdout_cases, root=frozen_home)


def test_the_gate_verifies_the_sealed_run_before_it_reads_a_file_of_it(frozen_home, monkeypatch):
    from obai_e2e.protocol import gates
    from obai_e2e.protocol.seal import require_intact

    dev = sealed_dev_run(frozen_home)
    assert require_intact(dev, "the gate")["files"]  # intact and signed with the key: it stands
    aggregate = dev / "judging" / "r1" / "aggregate.json"
    aggregate.parent.mkdir(parents=True)
    aggregate.write_text(json.dumps({"calibration": {"n": 5, "judges": {}, "majority": {}}}))
    (dev / "results.json").write_text(json.dumps({"run": {"run_id": "dev"}, "units": [], "forged": True}))
    with pytest.raises(FrozenArtifactChanged, match=r"changed: results\.json; added: judging/r1/aggregate\.json"):
        gates.gate(dev, "development", None)
    assert not (dev / "gate-development.json").exists()

    unsigned = sealed_dev_run(frozen_home, "sealed-without-the-key")
    seal_file = unsigned / "seal.json"
    seal_file.write_text(json.dumps({k: v for k, v in json.loads(seal_file.read_text()).items() if k != "mac"}))
    with pytest.raises(FrozenArtifactChanged, match="carries no signature while OBAI_E2E_SEAL_KEY is set"):
        gates.gate(unsigned, "development", None)
    monkeypatch.delenv(KEY_ENV)  # without the key nothing can be checked but the list itself
    assert require_intact(unsigned, "the gate")["files"]
