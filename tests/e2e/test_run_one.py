"""Driving single units of the demo target through the harness, against the local store.

Real subprocesses of obai-demo, real traces read back through the opik SDK, real timeouts:
a hang killed with its whole process group, a dead store, hostile unit ids, the run_one
script, kill -9 at random points. What a driven unit holds (a trace by tag, an async
follow-up, a refusal, parallel units, trace_not_found, multi_match) is shown on the fault
matrix's runs (test_fault_matrix.py).
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from obai_e2e.base.errors import UsageError
from obai_e2e.base.opik_env import local_store_env
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.run.plan import create_run
from obai_e2e.trace.backend import Backend, connect
from obai_e2e.trace.resolve import UNREACHABLE_GIVE_UP_S

from .conftest import REPO, drive_id, hang_timeout, target_variant

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(harness_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cfg")
    # The bundled target timeout (a busy machine must not turn a slow turn into a timeout).
    target = target_variant(tmp, **{"target.kill_grace_s": 1, "trace_backend.resolve_deadline_s": 3})
    config = load_target_config(target)
    cases = load_cases_for(config)
    run_dir, _ = create_run(config, cases, Filters())
    return config, cases, run_dir, connect(config)


def with_faults(spec: str | None):
    if spec:
        os.environ["OBAI_DEMO_FAULTS"] = spec
    else:
        os.environ.pop("OBAI_DEMO_FAULTS", None)


def test_hanging_target_is_killed_with_its_children(setup, turn_seconds):
    config, cases, run_dir, backend = setup
    timeout = hang_timeout(turn_seconds)
    config = dataclasses.replace(config, target=dataclasses.replace(config.target, timeout_s=timeout))
    with_faults("hang@price of AAPL,")
    try:
        t0 = time.monotonic()
        packet, _ = drive_id(config, cases, run_dir, "M4", backend=backend)
    finally:
        with_faults(None)
    assert packet["turn"]["timed_out"] and packet["turn"]["killed"]
    assert packet["trace"]["status"] == "cli_timeout"
    # Killed at its timeout, not left to hang (the demo would sleep for ever).
    assert time.monotonic() - t0 < 3 * timeout + 60
    # Nothing of the turn's process group survives (the child ignored SIGTERM).
    out = subprocess.run(["ps", "-eww", "-o", "pid,args"], capture_output=True, text=True).stdout
    assert not [l for l in out.splitlines() if packet["session"] in l and "obai-demo" in l]


def test_stopped_store_is_opik_unreachable(setup, tmp_path):
    config, cases, run_dir, _ = setup
    dead = "http://127.0.0.1:9/api"  # the discard port: nothing listens
    backend = Backend(kind="local", project=config.backend.project, api_url=dead,
                      sdk_env={**local_store_env(dead), "OPIK_PROJECT_NAME": config.backend.project})
    config = dataclasses.replace(config, backend=dataclasses.replace(config.backend, resolve_deadline_s=300))
    packet, _ = drive_id(config, cases, run_dir, "MD4", backend=backend)
    assert packet["turn"]["exit_code"] == 0  # the agent still answers without its backend
    assert packet["trace"]["status"] == "opik_unreachable"
    # Given up after a few seconds of refused connections, not at the 300 s resolve deadline (the
    # margin covers the SDK's import and client set-up in the first attempt on a busy machine).
    assert packet["trace"]["resolve_ms"] < (UNREACHABLE_GIVE_UP_S + 90) * 1000


def test_unknown_or_hostile_ids_write_nothing(setup):
    config, cases, run_dir, backend = setup
    before = sorted(p.name for p in run_dir.iterdir())
    for bad in ("NOPE", "../MD1", "MD1/../../x", "S1.r9"):
        with pytest.raises(UsageError):
            drive_id(config, cases, run_dir, bad, backend=backend)
    with pytest.raises(UsageError, match="does not exist"):
        drive_id(config, cases, run_dir / "missing", "MD1", backend=backend)
    assert sorted(p.name for p in run_dir.iterdir()) == before


def script(name: str, *args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *args], capture_output=True, text=True,
                          env=env or os.environ, timeout=600)  # a hang guard: one unit takes seconds


def test_run_one_script_prints_the_same_bytes_twice(setup):
    config, cases, run_dir, backend = setup
    first = script("run_one.py", "--id", "MD5", "--run-dir", str(run_dir), "--target", str(config.path))
    assert first.returncode == 0, first.stderr
    second = script("run_one.py", "--id", "MD5", "--run-dir", str(run_dir), "--target", str(config.path))
    assert second.returncode == 0 and second.stdout == first.stdout
    assert json.loads(first.stdout)["unit_id"] == "MD5"
    bad = script("run_one.py", "--id", "../x", "--run-dir", str(run_dir))
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"] == "usage_error"
    assert "Traceback" not in bad.stderr


def test_kill_9_leaves_no_packet_or_a_complete_one(setup):
    config, cases, run_dir, backend = setup
    for i, delay in enumerate((0.3, 1.5, 3.0, 5.0, 7.5)):
        unit = ["F2", "F5", "S3", "S4", "P2"][i]
        proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "run_one.py"), "--id", unit,
                                 "--run-dir", str(run_dir), "--target", str(config.path)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        packet = run_dir / f"{unit}.json"
        if packet.exists():
            data = json.loads(packet.read_text())  # complete, parseable
            assert data["unit_id"] == unit and "harness" in data
    # Whatever was left, a later drive completes the units.
    for unit in ("F2", "F5"):
        packet, _ = drive_id(config, cases, run_dir, unit, backend=backend)
        assert packet["trace"]["status"] == "resolved"
