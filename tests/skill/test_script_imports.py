"""The SKILL.md scripts start without the opik SDK and import it only where they read traces.

Each script runs in its own interpreter (as SKILL.md runs it) under a probe that writes, at
exit, which top-level packages were imported. `--help` of every script, and the work of the
scripts that never read a trace, must leave `opik` out: importing it costs seconds.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
DEMO_RUN = REPO / "tests" / "judging" / "data" / "demo-run"
SKILL_SCRIPTS = ("preflight", "new_run", "drive", "review", "record_verdict", "judge_packets", "aggregate_judges",
                 "finalize_run", "run_one", "check_case")

PROBE = """
import atexit, json, os, runpy, sys

def report():
    with open(os.environ["IMPORT_PROBE_OUT"], "w") as fh:
        json.dump(sorted({name.split(".")[0] for name in sys.modules}), fh)

atexit.register(report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def imported(tmp_path: Path, script: str, *args: str, env: dict | None = None) -> tuple[set[str], dict]:
    out = tmp_path / f"probe-{script}-{len(list(tmp_path.glob('probe-*')))}.json"
    env = {**(env or os.environ), "IMPORT_PROBE_OUT": str(out)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(SCRIPTS / f"{script}.py"), *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script} {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}"
    return set(json.loads(out.read_text())), json.loads(done.stdout) if done.stdout.lstrip().startswith("{") else {}


@pytest.mark.parametrize("script", SKILL_SCRIPTS)
def test_help_does_not_import_the_sdk(tmp_path, script):
    modules, _ = imported(tmp_path, script, "--help")
    assert "obai_e2e" in modules  # the probe saw the script's own imports
    assert "opik" not in modules


def test_scripts_that_read_no_trace_never_import_the_sdk(tmp_path, trace_store):
    run = tmp_path / "run"
    shutil.copytree(DEMO_RUN, run)
    # The stored run names the files of the checkout it was recorded in; read this checkout's.
    meta = json.loads((run / "run.json").read_text())
    meta.update(target_config=str(REPO / "cases" / "target.yaml"), cases_file=str(REPO / "cases" / "cases.yaml"))
    (run / "run.json").write_text(json.dumps(meta, indent=2))
    (run / "MD1.verdict.json").unlink()
    (run / "results.json").unlink()
    env = {**os.environ, "OBAI_E2E_RUNS": str(tmp_path / "runs"), "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir)}

    modules, out = imported(tmp_path, "preflight", env=env)
    assert out["status"] == "ready" and "opik" not in modules
    modules, out = imported(tmp_path, "new_run", "--id", "MD1", env=env)
    assert Path(out["run_dir"]).is_dir() and "opik" not in modules
    modules, out = imported(tmp_path, "check_case", "--id", "MD1", "--run-dir", str(run), env=env)
    assert out["unit_id"] == "MD1" and out["outcomes"] and "opik" not in modules
    modules, _ = imported(tmp_path, "review", "--run-dir", str(run), env=env)
    assert "opik" not in modules
    modules, out = imported(tmp_path, "record_verdict", "--id", "MD1", "--run-dir", str(run), "--mechanical",
                            env=env)
    assert out["status"] == "recorded" and "opik" not in modules
    modules, out = imported(tmp_path, "finalize_run", "--run-dir", str(run), env=env)
    assert out["status"] == "finished" and "opik" not in modules
    assert (run / "results.json").is_file() and (run / "report.html").is_file()
