"""``obai-demo serve`` as a process against the local trace store: a question asked in the web
chat is traced exactly as ``obai-demo ask`` traces it, except for ``metadata.channel``."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid

import httpx
import pytest
from obai_demo import __version__
from obai_e2e.base.opik_env import QUIET_SDK_ENV
from obai_e2e.base.tls import default_context as tls
from obai_e2e.trace.search import is_project_missing

from .web_helpers import events, streamed_text

pytestmark = pytest.mark.slow

PROJECT = f"obai-demo-web-{uuid.uuid4().hex[:8]}"
MULTI = "What is Apple's stock price and its net margin?"
READY_TIMEOUT_S = 120  # the SDK import alone takes seconds on a loaded machine


def _ready_line(proc: subprocess.Popen) -> dict:
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT_S)
    assert line and line[0], f"no ready line; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
    return json.loads(line[0])


@pytest.fixture(scope="module")
def turns(trace_store, tmp_path_factory):
    """One question through the web chat (tag in the body, and in the header) and one through the CLI."""
    exe = shutil.which("obai-demo")
    assert exe, "obai-demo is not installed in this environment"
    home = tmp_path_factory.mktemp("web-home")
    env = {**os.environ, **trace_store.sdk_env(), "OPIK_PROJECT_NAME": PROJECT,
           "OBAI_DEMO_HOME": str(home)}
    env.pop("OBAI_DEMO_FAULTS", None)
    tags = {k: f"{k}-{uuid.uuid4().hex}" for k in ("ui", "header", "cli")}
    proc = subprocess.Popen([exe, "serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True, start_new_session=True)
    out = {}
    try:
        ready = _ready_line(proc)
        url = ready["url"]
        out["ready"] = ready
        out["ui"] = httpx.post(url + "api/ask", json={"query": MULTI, "session": "web-s1", "tag": tags["ui"]},
                               timeout=60, verify=tls())
        out["header"] = httpx.post(url + "api/ask", json={"query": MULTI, "session": "web-s2"},
                                   headers={"X-Obai-Trace-Tag": tags["header"]}, timeout=60, verify=tls())
        cli = subprocess.run([exe, "ask", "--session", "cli-s1", MULTI], capture_output=True, text=True,
                             env={**env, "OBAI_TRACE_TAG": tags["cli"]}, timeout=120)
        out["cli"] = cli
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
    out["exit_code"], out["stderr"] = proc.returncode, err

    for name, value in QUIET_SDK_ENV.items():
        os.environ.setdefault(name, value)
    import opik

    client = opik.Opik(host=trace_store.api_url, workspace="default", api_key=trace_store.token,
                       project_name=PROJECT)
    out["traces"] = {}
    for key, tag in tags.items():
        deadline = time.monotonic() + 15
        while True:
            try:
                found = client.search_traces(project_name=PROJECT, filter_string=f'tags contains "{tag}"',
                                             truncate=False)
            except Exception as exc:  # the project exists once the server's first trace is in
                if not is_project_missing(exc):
                    raise
                found = []
            if found or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        assert len(found) == 1, (key, len(found))
        trace = found[0].model_dump()
        spans = client.search_spans(project_name=PROJECT, trace_id=trace["id"], truncate=False)
        trace["spans"] = sorted((s.model_dump() for s in spans), key=lambda s: (s["start_time"], s["id"]))
        out["traces"][key] = trace
    out["tags"] = tags
    return out


def _shape(trace: dict) -> list[tuple]:
    return [(s["name"], s["type"], json.dumps(s["input"], sort_keys=True), json.dumps(s["output"], sort_keys=True))
            for s in trace["spans"]]


def test_ready_line_and_clean_stop(turns):
    ready = turns["ready"]
    assert ready["status"] == "serving" and ready["url"].startswith("http://127.0.0.1:")
    assert ready["health"] == ready["url"] + "healthz" and ready["outage_file"].endswith("backend-down")
    assert turns["exit_code"] == 0 and "obai-demo serve: stopped after" in turns["stderr"]
    assert "some traces were not delivered" not in turns["stderr"]


def test_web_answer_is_the_cli_answer(turns):
    cli = turns["cli"]
    assert cli.returncode == 0
    for key in ("ui", "header"):
        evs = events(turns[key])
        assert streamed_text(evs) + "\n" == cli.stdout and evs[-1]["exit_code"] == 0


def test_web_trace_matches_the_cli_trace(turns):
    ui, header, cli = (turns["traces"][k] for k in ("ui", "header", "cli"))
    for trace, key, session in ((ui, "ui", "web-s1"), (header, "header", "web-s2")):
        tag = turns["tags"][key]
        assert trace["name"] == cli["name"] == "hub"
        assert trace["input"] == {"query": MULTI, "session": session}
        assert trace["output"] == cli["output"]
        assert trace["thread_id"] == session and sorted(trace["tags"]) == sorted(["obai-demo", tag])
        assert trace["metadata"] == {"providers": ["obai-demo"], "e2e_tag": tag, "session_id": session,
                                     "demo_version": __version__, "channel": "ui", "faults": []}
        root = trace["spans"][0]
        assert root["name"] == "hub" and root["output"] == cli["spans"][0]["output"]
        assert _shape(trace)[1:] == _shape(cli)[1:]  # every span below the hub, inputs and outputs
    assert cli["metadata"]["channel"] == "cli"
