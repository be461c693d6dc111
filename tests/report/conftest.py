"""Fixtures for the report tests: one real faulted demo run, and Chromium."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
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
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    """``obai-e2e run --jobs 2`` over a seven-case file (one disabled), faults injected."""
    work = tmp_path_factory.mktemp("demo-run")
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
        out = json.loads(done.stdout)
        run_dir = Path(out["run_dir"])
        results = load_results(run_dir / "results.json")
        yield DemoRun(run_dir, done.returncode, results, env)
    finally:
        obai_e2e("traces", "stop", env=env, timeout=60)


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
