"""ledger-agent as real processes against the local trace store, its traces read back through the SDK."""
from __future__ import annotations

import json
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.slow

PROJECT = f"ledger-test-{uuid.uuid4().hex[:8]}"
TURN_TIMEOUT_S = 90  # generous: each turn imports the opik SDK on a shared, busy machine

TURNS = {
    "clean": ("Price and P/E of Apple", {}),
    "refused": ("Write me a haiku about autumn.", {}),
    "raises": ("What did AAPL close at?", {"LEDGER_FAULTS": "desk_raises"}),
    "untraced": ("What did AAPL close at?", {"LEDGER_TRACE": "off"}),
}


@pytest.fixture(scope="module")
def turns(trace_store, sdk_env):
    env = {**sdk_env, "LEDGER_OPIK_PROJECT": PROJECT}
    env.pop("LEDGER_FAULTS", None)

    def one(key: str):
        question, extra = TURNS[key]
        ref = f"{key}-{uuid.uuid4().hex[:8]}"
        proc = subprocess.run(["ledger-agent", "chat", "--conversation", f"conv-{key}", "--message", question],
                              env={**env, **extra, "LEDGER_RUN_REF": ref}, capture_output=True, text=True,
                              timeout=TURN_TIMEOUT_S)
        return key, (ref, proc)

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(pool.map(one, TURNS))
    import opik

    client = opik.Opik(project_name=PROJECT, host=trace_store.api_url, api_key=sdk_env.get("OPIK_API_KEY"),
                       _show_misconfiguration_message=False)
    out = {}
    for key, (ref, proc) in done.items():
        found = client.search_traces(project_name=PROJECT, filter_string=f'metadata.run_ref = "{ref}"')
        traces = [t.model_dump(mode="json") for t in found]
        spans = []
        if traces:
            spans = sorted((s.model_dump(mode="json") for s in
                            client.search_spans(project_name=PROJECT, trace_id=traces[0]["id"])),
                           key=lambda s: (s["start_time"], s["id"]))
        out[key] = {"proc": proc, "traces": traces, "spans": spans}
    return out


def test_clean_turn_trace_and_span_tree(turns):
    t = turns["clean"]
    assert t["proc"].returncode == 0, t["proc"].stderr
    reply = json.loads(t["proc"].stdout)
    assert len(t["traces"]) == 1
    trace = t["traces"][0]
    assert trace["name"] == "chat-turn" and not trace.get("tags")
    assert trace["thread_id"] == "conv-clean"
    assert trace["metadata"]["run_ref"].startswith("clean-") and trace["metadata"]["faults"] == []
    assert trace["input"]["messages"] == [{"role": "user", "content": "Price and P/E of Apple"}]
    assert trace["output"]["final"] == {"text": reply["reply"], "outcome": "answered"}
    spans = t["spans"]
    root = [s for s in spans if s["parent_span_id"] is None]
    assert [s["name"] for s in root] == ["orchestrator"]
    assert all(s["parent_span_id"] == root[0]["id"] for s in spans if s is not root[0])
    assert [(s["name"], s["type"]) for s in spans[1:]] == [
        ("policy.check", "guardrail"), ("toolkit.mount", "general"), ("agent:quotes", "tool"),
        ("toolkit.mount", "general"), ("agent:financials", "tool"), ("writer", "llm")]
    assert spans[1]["output"]["decision"] == "allow"
    mounts = [s for s in spans if s["name"] == "toolkit.mount"]
    # A span's provider is put first into its metadata, as Opik's backend does.
    assert [{k: v for k, v in s["metadata"].items() if k != "provider"} for s in mounts] == [
        {"toolkit": "equities"}, {"toolkit": "filings"}]
    assert all(s["metadata"].get("provider") == s.get("provider") for s in mounts if s.get("provider"))
    quotes = next(s for s in spans if s["name"] == "agent:quotes")
    assert quotes["output"]["status"] == "ok" and "\n211.37 close\n" in quotes["output"]["body"]
    assert all(s["end_time"] for s in spans) and trace["end_time"]


def test_refusal_is_a_string_decision_and_exit_3(turns):
    t = turns["refused"]
    assert t["proc"].returncode == 3
    assert json.loads(t["proc"].stdout)["outcome"] == "refused"
    names = [s["name"] for s in t["spans"]]
    assert names == ["orchestrator", "policy.check"]
    assert t["spans"][1]["output"]["decision"] == "deny"


def test_raising_desk_has_error_info_on_its_span(turns):
    t = turns["raises"]
    assert t["proc"].returncode == 0
    desk = next(s for s in t["spans"] if s["name"] == "agent:quotes")
    assert desk["error_info"]["exception_type"] == "DeskUnavailable" and desk["output"] is None
    assert t["traces"][0]["metadata"]["faults"] == ["desk_raises"]


def test_trace_off_writes_nothing(turns):
    t = turns["untraced"]
    assert t["proc"].returncode == 0 and t["traces"] == []
