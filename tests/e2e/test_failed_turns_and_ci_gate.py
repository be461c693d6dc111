"""Everyday failures said plainly: a mistyped target command, and a CI runner that has no baseline yet."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from obai_e2e.report.report_md import read_rows

from .conftest import target_variant
from .hostile_helpers import hostile_target, run_cli

pytestmark = pytest.mark.slow


def test_a_mistyped_target_subcommand_is_named_after_one_search(harness_env, tmp_path):
    target = target_variant(tmp_path, **{"target.command": ["obai-demo", "askk", "--session", "{session}", "{query}"]})
    code, out, err = run_cli("run", "--id", "MD1,F1", "--target", str(target), "--jobs", "2")
    assert code == 3, err[-2000:]
    run_dir = Path(out["run_dir"])
    agent_line = "obai-demo: error: argument COMMAND: invalid choice: 'askk' (choose from 'ask', 'serve')"
    for uid in ("MD1", "F1"):
        packet = json.loads((run_dir / f"{uid}.json").read_text(encoding="utf-8"))
        # One search, not the 20 s resolve deadline (a time limit would fail on a busy machine instead).
        assert packet["trace"]["attempts"] == 1 and packet["turn"]["exit_code"] == 2
        assert f"{uid} inconclusive target_failed" in err
    assert err.count(agent_line) == 2 and "exited 2 (a usage error) without a trace" in err
    assert [r["Reason"] for r in read_rows(run_dir / "report.md")] == ["target_failed"] * 2
    assert agent_line in (run_dir / "report.md").read_text(encoding="utf-8")
    assert "invalid choice: 'askk'" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_fresh_ci_runner_with_one_failing_unit_exits_non_zero_under_every_mode(tmp_path, trace_store):
    target, _ = hostile_target(tmp_path, "error_span:calc")
    env = {**os.environ, "OBAI_E2E_RUNS": str(tmp_path / "runs"), "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir)}
    restored = tmp_path / "e2e-baseline"
    restored.mkdir()  # the cache step had nothing to restore
    code, out, err = run_cli("run", "--id", "MD1", "--target", str(target), "--no-html", "--fail-on", "new_fail",
                             "--baseline", str(restored), env=env)
    assert code == 1, err[-2000:]
    why = "--fail-on new_fail: no baseline to compare with, so every failed unit counts as new: 1 failed (MD1)"
    assert out["fail_on"]["why"] == why and err.count(why) == 1
    for mode in ("regression", "fail"):
        again, out, err = run_cli("run", "--resume", out["run_dir"], "--target", str(target), "--no-html",
                                  "--fail-on", mode, "--baseline", str(restored), env=env)
        assert again == 1 and out["fail_on"]["why"].startswith(f"--fail-on {mode.split(',')[0]}"), err[-2000:]
