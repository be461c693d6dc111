"""Fixtures for the report tests: one real faulted demo run, and Chromium."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from filelock import FileLock
from obai_e2e.report.results import load_results

from .helpers import CASE_IDS, FAULTS, REPO, obai_e2e


@dataclass
class DemoRun:
    """A finished run of the demo target with injected faults."""

    run_dir: Path
    exit_code: int
    results: dict
    env: dict[str, str]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> DemoRun:
    """``obai-e2e run --jobs 2`` over a seven-case file (one disabled), faults injected.

    One run for the whole session: test workers (pytest-xdist) that need it wait for the first
    one to drive it, under a lock in the folder they share, and then read the same finished
    run directory (tests only read it, or copy it with ``run_copy``).
    """
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # the session's folder, shared by its workers
    work = root / "demo-run"
    done_file = work / "run-done.json"
    with FileLock(str(root / "demo-run.lock")):
        if not done_file.exists():
            _drive_demo_run(work, done_file)
    done = json.loads(done_file.read_text(encoding="utf-8"))
    run_dir = Path(done["run_dir"])
    return DemoRun(run_dir, done["exit_code"], load_results(run_dir / "results.json"), done["env"])


def _drive_demo_run(work: Path, done_file: Path) -> None:
    if work.exists():
        shutil.rmtree(work)  # a run that failed earlier in this session is driven again, from scratch
    work.mkdir(parents=True)
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["id"] in CASE_IDS]
    assert sorted(c["id"] for c in data["cases"]) == sorted(CASE_IDS)
    cases = work / "cases.yaml"
    cases.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    target = yaml.safe_load((REPO / "cases" / "target.yaml").read_text(encoding="utf-8"))
    target["trace_backend"]["resolve_deadline_s"] = 6  # R1 has no trace: do not wait 20 s for it
    target_path = work / "target.yaml"
    target_path.write_text(yaml.safe_dump(target, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "OBAI_E2E_RUNS": str(work / "runs"), "OBAI_TRACE_STORE_DIR": str(work / "store"),
           "OBAI_E2E_CASES": str(cases), "OBAI_E2E_TARGET": str(target_path), "OBAI_DEMO_FAULTS": FAULTS}
    env.pop("OBAI_E2E_HOME", None)
    try:
        done = obai_e2e("run", "--jobs", "2", env=env)
        assert done.returncode in (0, 1, 3), done.stderr[-3000:]
        run_dir = json.loads(done.stdout)["run_dir"]
    finally:
        obai_e2e("traces", "stop", env=env, timeout=60)  # the tests read the run's files, not its traces
    done_file.write_text(json.dumps({"run_dir": run_dir, "exit_code": done.returncode, "env": env}), encoding="utf-8")


@pytest.fixture
def run_copy(demo_run: DemoRun, tmp_path: Path) -> Path:
    """A private copy of the demo run directory, free to rewrite."""
    target = tmp_path / "run"
    shutil.copytree(demo_run.run_dir, target, ignore=shutil.ignore_patterns(".runner.*"))
    for name in ("report.html", "results.junit.xml"):
        (target / name).unlink(missing_ok=True)
    for path in target.iterdir():
        path.chmod(0o644)
    return target
