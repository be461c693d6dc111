"""Re-record the stored ledger-agent packets and raw traces the fast tests read.

    uv run python tests/examples/data/record.py

Drives a few cases of examples/ledger-agent (some with a fault set in the case's env)
against a fresh local trace store, in a temporary directory, and writes for each unit
``<unit>.packet.json`` (the packet as the harness stored it) and ``<unit>.trace.json``
(the raw trace and spans, as ``inspect-trace --raw --json`` prints them) beside this file.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[2] / "examples" / "ledger-agent"
UNITS = {"Q1": None, "Q1_late_mount": "late_mount", "Q2_feed_error": "feed_error",
         "F1_masked_error": "masked_error", "O1": None, "R1": None, "G1_blank_reply": "blank_reply"}


def obai(args: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "obai_e2e", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode not in (0, 1):
        sys.exit(f"obai-e2e {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    cases = {c["id"]: c for c in yaml.safe_load((EXAMPLE / "cases.yaml").read_text())["cases"]}
    chosen = []
    for unit, fault in UNITS.items():
        case = dict(cases[unit.split("_")[0]], id=unit)
        if fault:
            case["env"] = {**case.get("env", {}), "LEDGER_FAULTS": fault}
        chosen.append(case)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("target.yaml", "plan.yaml"):  # the target names its plan beside itself
            shutil.copy(EXAMPLE / name, work / name)
        (work / "cases.yaml").write_text(yaml.safe_dump({"version": 1, "cases": chosen}, sort_keys=False))
        env = {**os.environ, "OBAI_E2E_RUNS": str(work / "runs"), "OBAI_TRACE_STORE_DIR": str(work / "store")}
        try:
            out = json.loads(obai(["run", "--target", "target.yaml", "--cases", "cases.yaml", "--no-html"], work, env))
            run_dir = Path(out["report_md"]).parent
            for unit in UNITS:
                packet = json.loads((run_dir / f"{unit}.json").read_text())
                (HERE / f"{unit}.packet.json").write_text(json.dumps(packet, indent=1, ensure_ascii=False) + "\n")
                tree = obai(["inspect-trace", "--raw", "--json", "--trace-id", packet["trace"]["trace_id"],
                             "--target", "target.yaml"], work, env)
                (HERE / f"{unit}.trace.json").write_text(tree)
                print(f"recorded {unit}")
        finally:
            obai(["traces", "stop", "--store-dir", str(work / "store")], work, env)


if __name__ == "__main__":
    main()
