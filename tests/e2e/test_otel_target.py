"""Adopting an agent traced through OpenTelemetry (examples/pydantic-agent: harbor-desk, PydanticAI
exporting OTLP/HTTP protobuf) end to end, through the local store's OTLP path.

Five seed turns (three questions, a refusal, and the third question once more with a failing
desk) are exported to the session's trace store; ``obai-e2e adopt`` drafts target.yaml and
cases.yaml from them. One headless run with that draft, unedited, drives the clean cases and
a copy of one case per rubric family with the agent's fault for it switched on through the
case's ``env``: every clean unit passes, every faulted one trips exactly its code; every turn's
spans land in one trace of their own, and no export is refused. Kept to a few turns: each
imports PydanticAI and the OpenTelemetry SDK.
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from obai_e2e.trace import refused
from obai_e2e.trace.backend import connect_to
from obai_e2e.trace.search import search_spans, search_traces

from .conftest import obai_json_here

pytestmark = pytest.mark.slow

ETA, BOTH, CARGO = ("When is the Aurora due?", "What berth fee does the Kestrel pay and when does it arrive?",
                    "How much cargo does the Solstice carry?")
SEEDS = [(ETA, ""), (BOTH, ""), (CARGO, ""), ("Write me a poem about the sea.", ""), (CARGO, "manifest_down")]
# fault -> (the question of the case it is put on, verdict, the one code it trips)
MATRIX = {
    "strict_screen": (BOTH, "fail", "guardrail.false_refusal"),
    "skip_tariff": (BOTH, "fail", "routing.specialist_missing"),
    "eta_raises": (ETA, "fail", "trace.error_span:harbor%20turn"),
    "manifest_down": (CARGO, "fail", "specialist.cargo_manifest.tool_error"),
    "stray_figure": (ETA, "needs_review", "hub.unverified_number:4.5"),
}


@pytest.fixture(scope="module")
def adopted(tmp_path_factory, trace_store, sdk_env):
    work = tmp_path_factory.mktemp("harbor-desk")
    project = f"harbor-desk-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in sdk_env.items() if not k.startswith("HARBOR_")}
    env.update(OBAI_E2E_RUNS=str(work / "runs"), OBAI_TRACE_STORE_DIR=str(trace_store.data_dir))
    for question, fault in SEEDS:
        done = subprocess.run([shutil.which("harbor-desk"), "ask", question], capture_output=True, text=True,
                              env={**env, "HARBOR_PROJECT": project, "HARBOR_FAULTS": fault}, timeout=600)
        assert done.returncode in (0, 3) and "refused" not in done.stderr, done.stderr
    code, summary, err = obai_json_here("adopt", "--project", project, "--traces", str(len(SEEDS)),
                                        "--refusal-exit-code", "3", "--command",
                                        "harbor-desk ask --session {session} {query}", "--out", "draft",
                                        cwd=work, env=env)
    assert code == 0, err
    return {"work": work, "env": env, "summary": summary, "project": project}


def test_adopt_drafts_a_configuration_that_needs_no_edit(adopted):
    s = adopted["summary"]
    assert [u["key"] for u in s["undecided"]] == ["vocabulary.skill_load_span"]  # the agent loads no skills
    rows = [r for r in s["checked"] if r["case"]]
    assert [(r["verdict"], r["resolution"]["method"], r["resolution"]["ok"]) for r in rows] == [
        ("pass", "thread", True)] * 4
    chosen = {c["key"]: c["value"] for c in s["choices"]}
    assert (chosen["vocabulary.hub_span"], chosen["vocabulary.guardrail_span"],
            chosen["vocabulary.specialist_span"]) == ("harbor turn", "harbor_screen", "execute_tool {name}")


def test_clean_and_faulted_turns_get_their_verdicts_through_the_store(adopted, monkeypatch):
    work, env = adopted["work"], adopted["env"]
    monkeypatch.setenv("OBAI_TRACE_STORE_DIR", env["OBAI_TRACE_STORE_DIR"])
    data = yaml.safe_load((work / "draft" / "cases.yaml").read_text())
    by_query = {c["query"]: c for c in data["cases"]}
    for fault, (question, _, _) in MATRIX.items():
        case = copy.deepcopy(by_query[question])
        case.update(id=f"{case['id']}_{fault}", env={"HARBOR_FAULTS": fault})
        data["cases"].append(case)
    (work / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, err = obai_json_here("run", "--target", "draft/target.yaml", "--cases", "matrix.yaml", "--jobs", "2",
                                    "--no-html", cwd=work, env=env)
    assert code == 1, err
    run_dir = Path(out["report_md"]).parent
    units = {u["unit_id"]: u for u in map(json.loads, (run_dir / "results.units.jsonl").read_text().splitlines())}
    clean = [c["id"] for c in data["cases"] if "env" not in c]
    assert {i: units[i]["verdict"] for i in clean} == {i: "pass" for i in clean}
    for fault, (question, verdict, code_) in MATRIX.items():
        unit = units[f"{by_query[question]['id']}_{fault}"]
        assert (unit["verdict"], unit["reasons"]) == (verdict, [code_]), fault
    packets = [json.loads((run_dir / f"{u}.json").read_text()) for u in units]
    assert {p["trace"]["method"] for p in packets} == {"thread"}
    # No export refused: the agent counted none, and the store kept no refused write for the project.
    assert all("refused" not in (p["turn"].get("stderr_tail") or "") for p in packets)
    backend = connect_to("local", adopted["project"], start_local=False)
    assert refused.from_store(backend, datetime.now(timezone.utc) - timedelta(hours=1)) is None
    # One trace per turn, holding all of its spans (the hub, the screen and every desk the turn called).
    trace_ids = [p["trace"]["trace_id"] for p in packets]
    assert len(set(trace_ids)) == len(packets)
    stored = search_traces(backend, None, limit=100)
    assert len(stored) == len(SEEDS) + len(packets)
    for p in packets:
        names = {sp["name"] for sp in search_spans(backend, p["trace"]["trace_id"])}
        assert {"harbor turn", "harbor_screen"} <= names, names
        assert {f"execute_tool {t}" for t in p["case"].get("expected_tools", [])} <= names or \
            p["unit_id"].endswith(("strict_screen", "skip_tariff", "eta_raises")), names
