"""Starting, finding, stopping and restarting the background store; the CLI around it."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from obai_e2e.base.errors import StoreError, UsageError
from obai_e2e.tracestore import daemon, ensure_running, status, stop
from obai_e2e.tracestore.guard import page_key

from .helpers import Api, flt, project_name, trace_payload

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _servers_of(store_dir: Path) -> list[int]:
    """Pids of processes serving ``store_dir`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if " serve " in args and str(store_dir) in args and int(entry.name) != os.getpid():
            if _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


@pytest.fixture
def store_dir(tmp_path):
    """A fresh store directory; afterwards its server is stopped and no server of it is left."""
    path = tmp_path / "store"
    yield path
    stop(path)
    deadline = time.monotonic() + 15  # returns as soon as the server is gone
    while _servers_of(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _servers_of(path) == [], "a server of this store outlived stop()"


def test_second_start_finds_the_running_store(trace_store):
    again = ensure_running(trace_store.data_dir)
    assert again.already_running and again.pid == trace_store.pid and again.port == trace_store.port
    info = status(trace_store.data_dir)
    assert info["running"] and info["state"] == "running" and info["pid"] == trace_store.pid
    assert set(info["counts"]) == {"traces", "spans"}


def test_stop_restart_keeps_data(store_dir):
    first = ensure_running(store_dir)
    assert not first.already_running
    state = json.loads((store_dir / "store.json").read_text())
    assert {"pid", "port", "url", "api_url", "data_dir", "started_at"} <= set(state)
    assert state["pid"] == first.pid and state["api_url"] == first.api_url
    project = project_name("restart")
    api = Api(first.api_url, first.token)
    trace = trace_payload(project, tags=["kept"])
    api.batch("traces", [trace])
    api.close()

    assert stop(store_dir) is True
    assert not (store_dir / "store.json").exists() and not _alive(first.pid)
    assert status(store_dir)["state"] == "stopped"
    assert stop(store_dir) is False

    second = ensure_running(store_dir)
    assert not second.already_running and second.pid != first.pid and second.token != first.token
    api = Api(second.api_url, second.token)
    stale = Api(second.api_url, first.token)
    try:
        assert [t["id"] for t in api.search("traces", project, [flt("tags", "contains", "kept")])] == [trace["id"]]
        assert stale.search_raw("traces", {"project_name": project}).status_code == 401
    finally:
        api.close()
        stale.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_state(store_dir: Path, pid: int) -> None:
    store_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    state = {"pid": pid, "port": port, "url": url, "api_url": f"{url}/api", "data_dir": str(store_dir),
             "started_at": "2026-01-01T00:00:00.000000Z"}
    (store_dir / "store.json").write_text(json.dumps(state))


def test_stale_state_with_dead_pid_is_replaced(store_dir):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _write_state(store_dir, gone.pid)
    assert status(store_dir)["state"] == "stale"
    info = ensure_running(store_dir)
    assert not info.already_running and info.pid != gone.pid
    assert json.loads((store_dir / "store.json").read_text())["pid"] == info.pid


def test_stale_state_with_unrelated_live_pid_leaves_that_process_alone(store_dir):
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _write_state(store_dir, bystander.pid)
        assert status(store_dir)["state"] == "stale"
        assert stop(store_dir) is False  # not a store process: not signalled
        _write_state(store_dir, bystander.pid)
        info = ensure_running(store_dir)
        assert info.pid != bystander.pid and bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_concurrent_starts_share_one_server(store_dir):
    results: list = []

    def start() -> None:
        try:
            results.append(ensure_running(store_dir))
        except Exception as exc:  # pragma: no cover - reported below
            results.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(not isinstance(r, Exception) for r in results), results
    assert len({r.pid for r in results}) == 1
    assert sum(not r.already_running for r in results) == 1


def test_visibility_delay_hides_new_entries_from_search(store_dir):
    delay_s = 2.0
    info = ensure_running(store_dir, visibility_delay_ms=int(delay_s * 1000))
    with pytest.raises(StoreError, match="visibility delay"):
        ensure_running(store_dir, visibility_delay_ms=0)
    project = project_name("lag")
    api = Api(info.api_url, info.token)
    try:
        trace = trace_payload(project, tags=["lag"])
        written = time.monotonic()
        api.batch("traces", [trace])
        hidden = api.search("traces", project, [flt("tags", "contains", "lag")])
        # A machine so busy that the search came back after the delay proves nothing either way.
        assert hidden == [] or time.monotonic() - written >= delay_s
        assert api.get("traces", trace["id"]).status_code == 200  # reads by id are not delayed
        time.sleep(max(0.0, delay_s + 0.1 - (time.monotonic() - written)))
        assert [t["id"] for t in api.search("traces", project)] == [trace["id"]]
    finally:
        api.close()


ENTRY_POINTS = {
    "cli": [sys.executable, "-m", "obai_e2e", "traces"],
    "script": [sys.executable, str(SCRIPTS / "trace_store.py")],
}


def _cli(*args: str, via: str = "cli") -> tuple[int, dict]:
    cmd = ENTRY_POINTS[via]
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300)  # a hang guard
    return done.returncode, json.loads(done.stdout)


def test_cli_start_status_stop(store_dir):
    code, out = _cli("start", "--store-dir", str(store_dir), via="cli")
    assert code == 0 and out["status"] == "started" and out["env"]["OPIK_URL_OVERRIDE"] == out["api_url"]
    state = json.loads((store_dir / "store.json").read_text())
    assert out["env"]["OPIK_API_KEY"] == state["token"] and out["ui_url"] == state["ui_url"]
    code, again = _cli("start", "--store-dir", str(store_dir), via="script")
    assert code == 0 and again["status"] == "already_running" and again["pid"] == out["pid"]
    assert out["page_url"] == f"{state['ui_url']}?key={page_key(state['token'])}"
    code, st = _cli("status", "--store-dir", str(store_dir))
    assert code == 0 and st["status"] == "running" and st["port"] == out["port"]
    assert state["token"] not in json.dumps(st) and "page_url" not in st  # no token unless asked
    endpoint = out["api_url"] + "/v1/private/otel/v1/traces"
    assert out["env"]["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == endpoint
    assert out["env"]["OTEL_EXPORTER_OTLP_HEADERS"] == f"Comet-Workspace=default,Authorization={state['token']}"
    assert st["env"] == {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
                         "OTEL_EXPORTER_OTLP_HEADERS": "Comet-Workspace=default"}
    code, shown = _cli("status", "--store-dir", str(store_dir), "--show-token")
    assert shown["token"] == state["token"] and shown["page_url"] == out["page_url"]
    assert shown["env"]["OTEL_EXPORTER_OTLP_HEADERS"] == out["env"]["OTEL_EXPORTER_OTLP_HEADERS"]
    code, stopped = _cli("stop", "--store-dir", str(store_dir))
    assert code == 0 and stopped["status"] == "stopped"
    code, st = _cli("status", "--store-dir", str(store_dir))
    assert code == 9 and st["status"] == "stopped"


def test_a_second_server_for_the_same_directory_is_refused(trace_store, store_dir):
    with pytest.raises(StoreError, match="already running"):
        daemon.serve(trace_store.data_dir)
    with pytest.raises(StoreError, match="already running .* on port"):
        ensure_running(trace_store.data_dir, port=_free_port())
    assert stop(store_dir) is False


def test_a_taken_port_is_reported(store_dir):
    store_dir.mkdir(parents=True)
    # What an earlier start and stop of this store left in its log is not this start's error.
    (store_dir / "server.log").write_text("trace store listening on http://127.0.0.1:1 (data in x); stop with Ctrl-C"
                                          " or SIGTERM\ntrace store stopped\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(StoreError) as caught:
            ensure_running(store_dir, port=port)
    assert str(caught.value).startswith(f"the trace store did not start (exit code 9): cannot listen on "
                                        f"127.0.0.1:{port}: Address already in use")
    assert "listening on" not in str(caught.value) and "stopped" not in str(caught.value)
    assert status(store_dir)["state"] == "stopped"


def test_cli_refuses_bad_arguments(store_dir, monkeypatch):
    done = subprocess.run([*ENTRY_POINTS["cli"], "start", "--port", "70000"], capture_output=True, text=True)
    assert done.returncode == 2 and "port must be a number from 0 to 65535" in done.stderr
    monkeypatch.setenv(daemon.DELAY_ENV, "soon")
    with pytest.raises(UsageError, match=daemon.DELAY_ENV):
        ensure_running(store_dir)
