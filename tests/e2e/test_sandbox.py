"""Sandbox and teardown in mode A, secret redaction, and the run-directory lock."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from obai_e2e.base.errors import RunLocked
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.sandbox import sandboxes_root
from obai_e2e.run.plan import create_run
from obai_e2e.run.preflight import run as preflight
from obai_e2e.rundir.lock import RunLock

from .conftest import REPO, drive_id, target_variant

pytestmark = pytest.mark.slow


def hooked_target(tmp: Path, **extra) -> Path:
    log = tmp / "hooks.log"
    return target_variant(tmp, **{
        "sandbox.snapshot": ["sh", "-c", f"echo snapshot {{sandbox}} >> {log}"],
        "sandbox.restore": ["sh", "-c", f"echo restore {{sandbox}} >> {log}"],
        "target.kill_grace_s": 1, "trace_backend.resolve_deadline_s": 3, **extra})


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_hooks_run_around_a_case_and_the_sandbox_is_removed(harness_env, tmp_path):
    config = load_target_config(hooked_target(tmp_path))
    cases = load_cases_for(config)
    run_dir, _ = create_run(config, cases, Filters(ids=("MD1",)))
    packet, _ = drive_id(config, cases, run_dir, "MD1")
    assert packet["trace"]["status"] == "resolved" and packet["sandbox"]["restore_error"] is None
    lines = (tmp_path / "hooks.log").read_text().split()
    assert lines[0] == "snapshot" and lines[2] == "restore" and lines[1] == lines[3]
    box = Path(lines[1])
    assert box.parent == sandboxes_root() and not box.exists()


def run_one(config_path: Path, run_dir: Path, unit: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(REPO / "scripts" / "run_one.py"), "--id", unit,
                             "--run-dir", str(run_dir), "--target", str(config_path)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def demo_processes(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eww", "-o", "pid,stat,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if marker in l and "obai-demo" in l and " Z" not in l]


def test_sigterm_tears_everything_down(harness_env, tmp_path):
    path = hooked_target(tmp_path, **{"target.timeout_s": 120})
    config = load_target_config(path)
    cases = load_cases_for(config)
    run_dir, meta = create_run(config, cases, Filters(ids=("MD2",)))
    marker = f"{meta.run_id.replace('/', '-')}-MD2-"
    env = {**os.environ, "OBAI_DEMO_FAULTS": "hang"}
    proc = run_one(path, run_dir, "MD2", env)
    if not wait_for(lambda: demo_processes(marker)):
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the target never started: {out[-1000:]} {err[-2000:]}")
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    log = (tmp_path / "hooks.log").read_text().split()
    assert log.count("restore") == 1
    assert not Path(log[1]).exists()
    assert wait_for(lambda: not demo_processes(marker)), demo_processes(marker)
    assert not (run_dir / "MD2.json").exists()


def test_leftovers_of_a_killed_run_are_cleared_before_the_next(harness_env, tmp_path):
    path = hooked_target(tmp_path, **{"target.timeout_s": 120})
    config = load_target_config(path)
    cases = load_cases_for(config)
    run_dir, meta = create_run(config, cases, Filters(ids=("MD3",)))
    marker = f"{meta.run_id.replace('/', '-')}-MD3-"
    env = {**os.environ, "OBAI_DEMO_FAULTS": "hang"}
    proc = run_one(path, run_dir, "MD3", env)
    try:
        assert wait_for(lambda: demo_processes(marker)), "the target never started"
        proc.kill()  # SIGKILL: no teardown can run
        proc.wait()
        box = Path((tmp_path / "hooks.log").read_text().split()[1])
        assert box.exists()
        report = preflight(path)
        assert report.ready, report.reason
        assert "cleared 1 leftover" in next(c["detail"] for c in report.checks if c["name"] == "sandbox")
        assert not box.exists()
        assert (tmp_path / "hooks.log").read_text().split().count("restore") == 1
    finally:
        subprocess.run(["pkill", "-9", "-f", marker], capture_output=True)


@pytest.mark.parametrize("passthrough", [False, True], ids=["withheld", "passed-through"])
def test_secrets_never_reach_the_packet(harness_env, tmp_path, passthrough):
    """A secret-looking variable is withheld from the agent unless target.env_passthrough names it;
    one the agent does see (passed through, or printed by the agent itself) is redacted in the packet."""
    script = ("echo \"key in answer: $MY_API_TOKEN\"; "
              "echo \"Authorization: Bearer sk-test-abcdefghijklmnop\" >&2; echo \"pw=$DB_PASSWORD\" >&2")
    fields = {"target.command": ["sh", "-c", script, "sh", "{query}"],
              "target.version_command": ["sh", "-c", "echo leaky-agent 1"],
              "trace_backend.resolve_deadline_s": 1}
    if passthrough:
        fields["target.env_passthrough"] = ["MY_API_TOKEN", "DB_PASSWORD"]
    path = target_variant(tmp_path, **fields)
    config = load_target_config(path)
    cases = load_cases_for(config)
    run_dir, _ = create_run(config, cases, Filters(ids=("MD4",)))
    os.environ["MY_API_TOKEN"] = "tok-0123456789abcdef"
    os.environ["DB_PASSWORD"] = "hunter2-very-secret"
    try:
        packet, _ = drive_id(config, cases, run_dir, "MD4")
    finally:
        os.environ.pop("MY_API_TOKEN")
        os.environ.pop("DB_PASSWORD")
    text = (run_dir / "MD4.json").read_text()
    for secret in ("tok-0123456789abcdef", "hunter2-very-secret", "sk-test-abcdefghijklmnop"):
        assert secret not in text
    assert packet["answer"] == ("key in answer: [REDACTED]" if passthrough else "key in answer:")
    assert "Bearer [REDACTED]" in packet["turn"]["stderr_tail"]
    assert ("pw=[REDACTED]" in packet["turn"]["stderr_tail"]) == passthrough


def test_two_runners_cannot_share_a_run_directory(harness_env, tmp_path):
    config = load_target_config()
    run_dir, _ = create_run(config, load_cases_for(config), Filters(ids=("MD1",)))
    env = {**os.environ}
    with RunLock(run_dir):
        done = subprocess.run([sys.executable, "-m", "obai_e2e", "run", "--resume", str(run_dir)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == RunLocked.exit_code
        assert json.loads(done.stdout)["error"] == "run_locked" and str(os.getpid()) in done.stdout
