"""Driving single units of the demo target through the harness, against the local store.

Real subprocesses of obai-demo, real traces read back through the opik SDK, real timeouts.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from obai_e2e.base.errors import UsageError
from obai_e2e.base.opik_env import local_store_env
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.run.plan import create_run
from obai_e2e.trace.backend import Backend, connect

from .conftest import REPO, drive_id, target_variant

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(harness_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cfg")
    target = target_variant(tmp, **{"target.timeout_s": 15, "target.kill_grace_s": 1,
                                    "trace_backend.resolve_deadline_s": 3})
    config = load_target_config(target)
    cases = load_cases_for(config)
    run_dir, _ = create_run(config, cases, Filters())
    return config, cases, run_dir, connect(config)


def with_faults(spec: str | None):
    if spec:
        os.environ["OBAI_DEMO_FAULTS"] = spec
    else:
        os.environ.pop("OBAI_DEMO_FAULTS", None)


def test_sync_case_resolves_its_trace(setup):
    config, cases, run_dir, backend = setup
    with_faults(None)
    packet, created = drive_id(config, cases, run_dir, "MD1", backend=backend)
    assert created
    assert packet["turn"]["exit_code"] == 0 and not packet["turn"]["timed_out"]
    assert packet["trace"]["status"] == "resolved" and packet["trace"]["method"] == "tag"
    digest = packet["trace"]["digest"]
    assert [s["skill"] for s in digest["skill_loads"]] == ["market-data"]
    assert [c["name"] for c in digest["specialist_calls"]] == ["market_data_analysis"]
    assert digest["final_response"].strip() == packet["answer"]
    assert "SKILL LOADS:" in packet["trace"]["curated"] and "MARKET_DATA_ANALYSIS CALLS" in packet["trace"]["curated"]
    assert packet["harness"]["overhead_ms"] < packet["harness"]["wall_ms"]
    again, created = drive_id(config, cases, run_dir, "MD1", backend=backend)
    assert not created and again == packet


def test_async_case_waits_and_follows_up_in_the_same_session(setup):
    config, cases, run_dir, backend = setup
    packet, _ = drive_id(config, cases, run_dir, "A1", backend=backend)
    assert packet["async"]["job_id"] and packet["async"]["wait_s"] >= packet["async"]["eta_s"]
    follow = packet["followup"]
    assert follow is not None and "Total trades" in follow["answer"]
    assert follow["trace"]["status"] == "resolved"
    assert follow["trace"]["trace_id"] != packet["trace"]["trace_id"]
    assert follow["trace"]["digest"]["thread_id"] == packet["trace"]["digest"]["thread_id"] == packet["session"]


def test_rejection_case(setup):
    config, cases, run_dir, backend = setup
    packet, _ = drive_id(config, cases, run_dir, "R1", backend=backend)
    assert packet["turn"]["exit_code"] == 1
    digest = packet["trace"]["digest"]
    assert digest["guardrail"]["refused"] and digest["specialist_calls"] == []


def test_hanging_target_is_killed_with_its_children(setup):
    config, cases, run_dir, backend = setup
    with_faults("hang@price of AAPL,")
    try:
        t0 = time.monotonic()
        packet, _ = drive_id(config, cases, run_dir, "M4", backend=backend)
    finally:
        with_faults(None)
    assert packet["turn"]["timed_out"] and packet["turn"]["killed"]
    assert packet["trace"]["status"] == "cli_timeout"
    assert time.monotonic() - t0 < config.target.timeout_s + 15
    # Nothing of the turn's process group survives (the child ignored SIGTERM).
    out = subprocess.run(["ps", "-eww", "-o", "pid,args"], capture_output=True, text=True).stdout
    assert not [l for l in out.splitlines() if packet["session"] in l and "obai-demo" in l]


def test_no_trace_is_trace_not_found(setup):
    config, cases, run_dir, backend = setup
    with_faults("no_trace@52-week")
    try:
        packet, _ = drive_id(config, cases, run_dir, "MD2", backend=backend)
    finally:
        with_faults(None)
    assert packet["turn"]["exit_code"] == 0
    assert packet["trace"]["status"] == "trace_not_found"
    assert packet["trace"]["attempts"] > 1


def test_duplicate_trace_is_multi_match(setup):
    config, cases, run_dir, backend = setup
    with_faults("duplicate_trace@Nvidia")
    try:
        packet, _ = drive_id(config, cases, run_dir, "MD3", backend=backend)
    finally:
        with_faults(None)
    assert packet["trace"]["status"] == "multi_match"
    assert len(packet["trace"]["candidates"]) == 2


def test_stopped_store_is_opik_unreachable(setup, tmp_path):
    config, cases, run_dir, _ = setup
    dead = "http://127.0.0.1:9/api"  # the discard port: nothing listens
    backend = Backend(kind="local", project=config.backend.project, api_url=dead,
                      sdk_env={**local_store_env(dead), "OPIK_PROJECT_NAME": config.backend.project})
    t0 = time.monotonic()
    packet, _ = drive_id(config, cases, run_dir, "MD4", backend=backend)
    assert packet["turn"]["exit_code"] == 0  # the agent still answers without its backend
    assert packet["trace"]["status"] == "opik_unreachable"
    assert time.monotonic() - t0 < 30


def test_four_units_in_parallel_get_their_own_traces(setup):
    config, cases, run_dir, backend = setup
    ids = ["F1", "F3", "F4", "O1"]
    with ThreadPoolExecutor(4) as pool:
        packets = list(pool.map(lambda i: drive_id(config, cases, run_dir, i, backend=backend)[0], ids))
    trace_ids = [p["trace"]["trace_id"] for p in packets]
    assert all(p["trace"]["status"] == "resolved" for p in packets)
    assert len(set(trace_ids)) == 4
    for p in packets:
        assert json.loads(json.dumps(p["trace"]["digest"]["final_response"])).strip() == p["answer"]
        assert p["case"]["query"] in p["trace"]["curated"]


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
                          env=env or os.environ, timeout=120)


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
