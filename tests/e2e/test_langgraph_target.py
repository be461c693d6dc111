"""Adopting a LangGraph agent (examples/langgraph-agent, traced by Opik's OpikTracer) end to end.

Three real turns of desk-graph are traced into the session's trace store; ``obai-e2e
adopt`` drafts target.yaml and cases.yaml from them and checks the draft on them; a
headless run with that draft, unedited, gives every clean case pass, its turns found by
their thread. A second run with the same draft and the agent's strict_screen fault names the
refusal of an on-topic question. Kept to a few turns: each imports LangGraph and the SDK.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from .conftest import obai_json_here

pytestmark = pytest.mark.slow

SEEDS = ["How is Apple trading today?", "What are Microsoft's revenue and P/E?", "Write me a poem about the sea."]


@pytest.fixture(scope="module")
def adopted(tmp_path_factory, trace_store, sdk_env):
    work = tmp_path_factory.mktemp("desk-graph")
    project = f"desk-graph-{uuid.uuid4().hex[:8]}"
    env = {**sdk_env, "OBAI_E2E_RUNS": str(work / "runs"), "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir)}
    agent_env = {**env, "DESK_GRAPH_PROJECT": project}
    agent_env.pop("DESK_GRAPH_FAULTS", None)

    def ask(question: str) -> int:
        return subprocess.run([shutil.which("desk-graph"), "ask", question], env=agent_env, capture_output=True,
                              timeout=600).returncode

    with ThreadPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(ask, SEEDS)) == [0, 0, 3]
    code, summary, err = obai_json_here("adopt", "--project", project, "--traces", "3", "--refusal-exit-code", "3",
                                        "--command", "desk-graph ask --thread {session} {query}", "--out", "draft",
                                        cwd=work, env=env)
    assert code == 0, err
    return {"work": work, "env": env, "summary": summary, "project": project}


def test_adopt_drafts_from_the_traces_and_checks_the_draft_on_them(adopted):
    s = adopted["summary"]
    assert s["undecided"] == [], s["undecided"]
    assert [(r["verdict"], r["resolution"]["method"], r["resolution"]["ok"]) for r in s["checked"]] == [
        ("pass", "thread", True)] * 3
    target = (adopted["work"] / "draft" / "target.yaml").read_text()
    assert f'project: "{adopted["project"]}"' in target and 'match: "thread"' in target


def test_a_clean_run_of_the_unedited_draft_passes_every_case(adopted):
    work, env = adopted["work"], adopted["env"]
    code, out, err = obai_json_here("run", "--target", "draft/target.yaml", "--cases", "draft/cases.yaml",
                                    "--jobs", "2", "--no-html", cwd=work, env=env)
    assert code == 0, err
    run_dir = Path(out["report_md"]).parent
    units = [json.loads(line) for line in (run_dir / "results.units.jsonl").read_text().splitlines()]
    assert sorted((u["unit_id"], u["verdict"]) for u in units) == [("T1", "pass"), ("T2", "pass"), ("T3", "pass")]
    packets = [json.loads((run_dir / f"{u['unit_id']}.json").read_text()) for u in units]
    assert {p["trace"]["method"] for p in packets} == {"thread"}
    price = next(p for p in packets if p["case"]["query"] == SEEDS[0])
    assert price["answer"].startswith("AAPL (Apple) closed at 214.55")


def test_the_strict_screen_fault_is_named_as_a_false_refusal(adopted):
    work, env = adopted["work"], adopted["env"]
    cases = yaml.safe_load((work / "draft" / "cases.yaml").read_text())
    case = next(c for c in cases["cases"] if c["query"] == SEEDS[1])
    case["env"] = {"DESK_GRAPH_FAULTS": "strict_screen"}
    (work / "strict.yaml").write_text(yaml.safe_dump({"version": 1, "cases": [case]}, sort_keys=False))
    code, out, err = obai_json_here("run", "--target", "draft/target.yaml", "--cases", "strict.yaml", "--no-html",
                                    cwd=work, env=env)
    assert code == 1, err
    row = json.loads((Path(out["report_md"]).parent / "results.units.jsonl").read_text().splitlines()[0])
    assert (row["verdict"], row["reasons"]) == ("fail", ["guardrail.false_refusal"])
