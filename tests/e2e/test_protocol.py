"""The evaluation protocol end to end: freeze, development run, gate, one holdout run.

Works on a copy of the bundle (OBAI_E2E_HOME) so the freeze manifest and the holdout
ledger of the repository are never touched. With a clean agent the development gate
passes, the holdout opens once and its own gate is evaluated; with an injected fault the
development gate fails and the holdout stays sealed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from obai_e2e.report.results import load_results
from bundle_copy import bundle_copy

from .conftest import REPO, obai_here

pytestmark = pytest.mark.slow

DEV_IDS = ("MD1", "F1", "R1")
HOLDOUT_IDS = ("HMD1", "HR1")


def make_home(tmp: Path) -> Path:
    home = bundle_copy(tmp / "bundle")
    dev = yaml.safe_load((home / "cases" / "cases.yaml").read_text())
    dev["cases"] = [c for c in dev["cases"] if c["id"] in DEV_IDS]
    (home / "cases" / "cases.yaml").write_text(yaml.safe_dump(dev, sort_keys=False))
    hold = yaml.safe_load((home / "cases" / "holdout.yaml").read_text())
    hold["cases"] = [c for c in hold["cases"] if c["id"] in HOLDOUT_IDS]
    (home / "cases" / "holdout.yaml").write_text(yaml.safe_dump(hold, sort_keys=False))
    return home


def e2e(env, *args) -> tuple[int, dict, str]:
    done = obai_here(list(args), REPO, env)
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        out = {}
    return done.returncode, out, done.stderr


def env_for(home: Path, runs: Path, store, faults: str | None = None) -> dict:
    env = {**os.environ, "OBAI_E2E_HOME": str(home), "OBAI_E2E_RUNS": str(runs),
           "OBAI_TRACE_STORE_DIR": str(store.data_dir)}
    env.pop("OBAI_E2E_CASES", None)
    env.pop("OBAI_E2E_TARGET", None)
    env.pop("OBAI_DEMO_FAULTS", None)
    if faults:
        env["OBAI_DEMO_FAULTS"] = faults
    return env


def test_freeze_gate_and_one_holdout_run(tmp_path, trace_store):
    home = make_home(tmp_path)
    env = env_for(home, tmp_path / "runs", trace_store)
    code, out, err = e2e(env, "freeze-audit", "freeze", "--id", "F1", "--reason", "protocol test")
    assert code == 0, err
    assert out["status"] == "frozen" and out["files"] > 10
    ledger = home / "catalogs" / "holdout-ledger.json"

    # Before any gate the holdout is sealed for every path into it.
    code, out, err = e2e(env, "new-run", "--cases", str(home / "cases" / "holdout.yaml"))
    assert code == 7 and out["error"] == "holdout_sealed"
    code, out, _ = e2e(env, "freeze-audit", "status")
    assert out["holdout"] == {"opens": 0, "state": "sealed"}

    code, out, err = e2e(env, "run", "--jobs", "2")
    assert code == 0, err
    dev = Path(out["run_dir"])
    code, gate, err = e2e(env, "freeze-audit", "gate", "--run-dir", str(dev))
    assert code == 0 and gate["passed"] and gate["gate"] == "development", gate

    # Integrity checks do not count as opens.
    for _ in range(2):
        assert e2e(env, "freeze-audit", "verify")[0] == 0
        assert e2e(env, "freeze-audit", "verify", "--run-dir", str(dev))[0] == 0
    assert not ledger.exists()

    code, opened, err = e2e(env, "freeze-audit", "open-holdout", "--dev-run", str(dev))
    assert code == 0, err
    holdout_run = Path(opened["holdout_run"])
    assert json.loads(ledger.read_text())["opens"][0]["freeze_id"] == "F1"
    code, again, _ = e2e(env, "freeze-audit", "open-holdout", "--dev-run", str(dev))
    assert code == 7 and "only once" in again["message"]

    code, out, err = e2e(env, "run", "--resume", str(holdout_run), "--jobs", "2")
    assert code == 0, err
    results = load_results(holdout_run / "results.json")
    assert sorted(u["case_id"] for u in results["units"]) == sorted(HOLDOUT_IDS)
    code, hgate, err = e2e(env, "freeze-audit", "gate", "--run-dir", str(holdout_run))
    assert code == 0 and hgate["gate"] == "holdout" and hgate["passed"]
    code, status, _ = e2e(env, "freeze-audit", "status")
    assert status["holdout"]["state"] == "result recorded" and status["holdout"]["opens"] == 1

    # After the holdout result, the same freeze id cannot change.
    prompt = home / "references" / "judge-prompt.md"
    prompt.write_text(prompt.read_text() + "\nOne more instruction.\n")
    code, out, _ = e2e(env, "freeze-audit", "freeze", "--id", "F1", "--reason", "tuning after the holdout")
    assert code == 7 and out["error"] == "holdout_sealed" and "references/judge-prompt.md" in out["message"]
    # The development cases are still not the holdout: the normal flow refuses a drifted freeze.
    code, out, _ = e2e(env, "preflight")
    assert code == 4 and "references/judge-prompt.md" in out["reason"]


def test_a_failed_development_gate_keeps_the_holdout_sealed(tmp_path, trace_store):
    home = make_home(tmp_path)
    env = env_for(home, tmp_path / "runs", trace_store, faults="crash@latest price")
    assert e2e(env, "freeze-audit", "freeze", "--id", "F1")[0] == 0
    code, out, err = e2e(env, "run", "--jobs", "2")
    assert code == 1, err  # a case failed
    dev = Path(out["run_dir"])
    code, gate, _ = e2e(env, "freeze-audit", "gate", "--run-dir", str(dev))
    assert code == 11 and not gate["passed"]
    failed = {c["id"] for c in gate["conditions"] if c["status"] == "fail"}
    assert {"no_fail", "no_fail_in_smoke"} <= failed
    code, out, _ = e2e(env, "freeze-audit", "open-holdout", "--dev-run", str(dev))
    assert code == 7 and "gate failed" in out["message"]
    assert not (home / "catalogs" / "holdout-ledger.json").exists()
    # The gate result is write-once: evaluating again gives the same file.
    code2, gate2, _ = e2e(env, "freeze-audit", "gate", "--run-dir", str(dev))
    assert code2 == 11 and gate2["conditions"] == gate["conditions"]
