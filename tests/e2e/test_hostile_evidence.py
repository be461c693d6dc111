"""Hostile evidence: a turn that rewrites an earlier unit's trace, deletes the project or edits the cases file,
and a forged file in a sealed run. Real harness, real local store, the tiny hostile agent.

The backend is configured as kind ``opik`` pointing at the local store with the store's own token: the
situation of a real Opik server, whose key the harness cannot scope, so the agent's key may PATCH any trace and
delete the project. Each unit's evidence is frozen when it is resolved and read once more after the run's last
turn: a write after a unit's turn makes that unit inconclusive and names the cause; every other unit keeps its
verdict. The cases file lives in the target's repository, where the agent can write: the run keeps its own copy
and names the change. One run per attack, few turns each; the deleted project goes through the chat flow's
background drive, the rest through `obai-e2e run`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from obai_e2e.report.results import load_results

from .conftest import obai_json_here
from .hostile_helpers import hostile_target, run_here

pytestmark = pytest.mark.slow

ASKED = "What is the latest price of AAPL"  # the hostile agent answers every question with AAPL's close
# Later than the harness's first read of the victim's trace (a settle of 1 s, twice, for kind opik) and than the
# victim's turn end + its allowance (flush_timeout_s 1 + clock_skew_s 0).
PATCH_AFTER_S = 2.5


def cases_file(repo: Path, units: dict[str, dict]) -> Path:
    """A cases file in the target's repository, one AAPL question per unit (``units``: id → extra fields)."""
    repo.mkdir(parents=True, exist_ok=True)
    path = repo / "cases.yaml"
    cases = [{"id": uid, "feature": "market_data", "query": f"{extra.pop('prefix', '')}{ASKED}?",
              "expected_skills": ["market-data"], "expected_tools": ["market_data_analysis"], **extra}
             for uid, extra in units.items()]
    text = yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False, default_flow_style=None)
    path.write_text(text, encoding="utf-8")
    assert "[market_data_analysis]" in text  # what the editing agent rewrites
    return path


@pytest.fixture
def opik_env(trace_store, harness_env):
    """The harness's environment for kind opik at the local store, with the store's own token as the key."""
    env = {**os.environ, "OPIK_URL_OVERRIDE": trace_store.api_url, "OPIK_API_KEY": trace_store.token,
           "OPIK_WORKSPACE": "default", "HOME": "/nonexistent"}
    return env


def opik_target(tmp: Path, project: str) -> Path:
    target, _ = hostile_target(tmp, "", **{"trace_backend.kind": "opik", "trace_backend.project": project,
                                          "trace_backend.clock_skew_s": 0, "trace_backend.flush_timeout_s": 1})
    return target


def run_in(env: dict, *args: str) -> tuple[int, dict, str]:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return run_here(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def units_of(out: dict) -> dict[str, dict]:
    return {u["unit_id"]: u for u in load_results(Path(out["results"]))["units"]}


def test_a_later_turn_patching_an_earlier_trace_and_editing_the_cases_is_named_never_used(opik_env, tmp_path):
    repo = tmp_path / "team-repo"
    cases = cases_file(repo, {"V1": {"prefix": "victim: "},
                              "P2": {"env": {"HOSTILE_AGENT": f"patch_victims:{PATCH_AFTER_S},edit_cases",
                                             "HOSTILE_CASES_FILE": str(repo / "cases.yaml")}},
                              "C3": {}})
    frozen = cases.read_bytes()
    target = opik_target(tmp_path, "evidence-patch")
    code, out, err = run_in(opik_env, "run", "--jobs", "1", "--target", str(target), "--cases", str(cases))
    assert code == 3, err[-3000:]  # one unit inconclusive, none failed
    units = units_of(out)
    v1 = units["V1"]
    assert (v1["verdict"], v1["reasons"]) == ("inconclusive", ["trace_changed_after_turn"]), v1
    assert "updated at" in v1["judgment"] and "read again" in v1["judgment"]
    assert {u: units[u]["verdict"] for u in ("P2", "C3")} == {"P2": "pass", "C3": "pass"}
    run_dir = Path(out["run_dir"])
    reread = json.loads((run_dir / "traces" / "V1.reread.json").read_text())
    assert reread["turns"][0]["status"] == "trace_changed_after_turn"
    assert json.loads((run_dir / "traces" / "C3.reread.json").read_text())["turns"][0]["status"] == "unchanged"
    # The packet keeps the trace as it was read, bound to its kept copy by hash.
    v1_packet = json.loads((run_dir / "V1.json").read_text())
    assert v1_packet["trace"]["status"] == "resolved" and v1_packet["evidence"]["file"] == "traces/V1.json"
    assert "forged" not in (run_dir / "traces" / "V1.json").read_text()

    # The agent rewrote the cases file in its repository during its turn: the run used its own copy.
    assert cases.read_bytes() != frozen and (run_dir / "inputs" / "cases.yaml").read_bytes() == frozen
    changed = load_results(run_dir / "results.json")["inputs"]["changed"]
    assert [c["role"] for c in changed] == ["cases"] and changed[0]["source"] == str(cases)
    assert "Inputs changed while the run went on" in err and str(cases) in err
    head = (run_dir / "report.md").read_text().split("| ID |")[0]
    assert "cases file" in head and "changed" in head
    assert "inputs-changed" in (run_dir / "report.html").read_text()
    # A later command on the run reads the copy, never the edited file (its C3 expects fundamentals_analysis).
    code, check, err = obai_json_here("check-case", "--run-dir", str(run_dir), "--id", "C3", env=opik_env)
    assert code == 0 and check["verdict"] == "pass", (check, err[-1000:])

    # A forged aggregate in the sealed run: the gate verifies before it reads and names it (exit 6).
    forged = run_dir / "judging" / "r1" / "aggregate.json"
    forged.parent.mkdir(parents=True)
    forged.write_text(json.dumps({"agreement": {"overall": {"percent_agreement": 1.0}}, "calibration": {}}))
    code, gate, err = obai_json_here("freeze-audit", "gate", "--run-dir", str(run_dir), env=opik_env)
    assert code == 6 and gate["error"] == "frozen_artifact_changed", (gate, err[-1000:])
    assert "judging/r1/aggregate.json" in gate["message"] and not (run_dir / "gate-development.json").exists()


def test_a_deleted_project_is_named_on_every_unit_it_took_in_the_chat_flow(opik_env, tmp_path):
    """The chat flow's background drive reads every unit's traces again once its last turn ended."""
    cases = cases_file(tmp_path / "repo", {"D1": {}, "D2": {}, "D3": {"env": {"HOSTILE_AGENT": "delete_project"}}})
    target = opik_target(tmp_path, "evidence-deleted")
    given = ("--target", str(target), "--cases", str(cases))
    code, made, err = obai_json_here("new-run", *given, env=opik_env)
    assert code == 0, err[-2000:]
    run_dir = made["run_dir"]
    lines: list[str] = []
    for _ in range(30):
        code, out, err = obai_json_here("drive", "--run-dir", run_dir, "--wait", "30", *given, env=opik_env)
        assert code == 0 and out, err[-2000:]
        lines += out["units"]
        if out["status"] == "done":
            break
    assert out["status"] == "done" and "3 units driven" in out["count"], out
    # D1 and D2 were read when their turns ended, and were gone when read again: each gets a second line.
    for uid in ("D1", "D2"):  # the last line of each (a slow machine may poll between the two reads)
        assert [line.split()[1:3] for line in lines if line.startswith(f"{uid} ")][-1] == \
            ["inconclusive", "trace_deleted"], lines
    for uid in ("D1", "D2"):
        code, check, err = obai_json_here("check-case", "--run-dir", run_dir, "--id", uid, env=opik_env)
        assert (check["verdict"], check["reasons"]) == ("inconclusive", ["trace_deleted"]), (check, err[-1000:])
        assert "the project 'evidence-deleted' no longer exists" in check["judgment"]
        assert "was there at" in check["judgment"]
    code, d3, err = obai_json_here("check-case", "--run-dir", run_dir, "--id", "D3", env=opik_env)
    assert (d3["verdict"], d3["reasons"]) == ("inconclusive", ["trace_not_found"]), d3  # gone before it was read
    assert "the project 'evidence-deleted' no longer exists" in d3["judgment"] and "deleted since" in d3["judgment"]
