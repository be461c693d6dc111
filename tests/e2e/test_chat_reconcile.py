"""The chat flow and the headless run of the same agent output differ only by the questions the headless
run did not ask.

SKILL.md is played against the demo on a few units (tests/skill/chat_player.py: drive, blind panel,
review, record, finish), with a panel that finds F5's answer incomplete ("is the valuation stretched?"
answered with figures only). Then `obai-e2e run --no-judges` judges the very same packets (copied
into a run of the same selection) without a panel or a judge. The two runs hold the same units with
the same rule outcomes; where they differ, the difference is a code of a question the headless run
lists as not asked, and its judgment names that question instead of claiming all rules passed.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from obai_e2e.drive.trace_snapshot import SNAPSHOT_DIR
from obai_e2e.report.results import load_results

from skill.chat_player import Player, in_this_environment, scripted_answer
from .conftest import obai_json

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SKILL_DIR = REPO / ".claude" / "skills" / "obai-e2e-regression"
UNITS = ("MD1", "F5", "R1")  # a clean answer, the one the panel finds incomplete, a refusal
Q, F = "hub.incomplete_answer", "hub.unfaithful_answer"
# Every judge of the panel: F5's answer (figures, no assessment) misses the ask; the rest is complete.
PLAN = {label: {"valuation stretched": "incomplete"} for label in ("J1", "J2", "J3")}


class PanelPlayer(Player):
    """The chat flow whose sub-agents judge by PLAN."""

    def _sub_agent(self, label, bundle, reply, prompt):
        text = json.dumps(scripted_answer(bundle, label, PLAN))
        if reply is not None:
            reply.write_text(text, encoding="utf-8")
        return text


def _units(run_dir: Path) -> dict[str, dict]:
    return {u["unit_id"]: u for u in load_results(run_dir / "results.json")["units"]}


def _headless_copy(chat_dir: Path, env: dict) -> Path:
    """A new run of the same selection holding the chat run's packets and kept traces, judged headless."""
    code, made, err = obai_json("new-run", "--id", ",".join(UNITS), env=env)
    assert code == 0, err[-2000:]
    run_dir = Path(made["run_dir"])
    for unit in UNITS:
        shutil.copy2(chat_dir / f"{unit}.json", run_dir / f"{unit}.json")
    shutil.copytree(chat_dir / SNAPSHOT_DIR, run_dir / SNAPSHOT_DIR, dirs_exist_ok=True)
    code, out, err = obai_json("run", "--resume", str(run_dir), "--no-judges", "--fail-on", "fail,not_asked",
                               "--json", env=env)
    assert code == 3, (code, err[-3000:])  # no unit failed; the questions not asked fail the run
    assert out["fail_on"]["why"].startswith("--fail-on not_asked: ")
    assert "judgment questions not asked: " in err
    return run_dir


def test_chat_and_headless_runs_of_one_output_differ_only_by_the_questions_not_asked(tmp_path, trace_store):
    env = {**os.environ, "CLAUDE_SKILL_DIR": str(SKILL_DIR), "OBAI_E2E_RUNS": str(tmp_path / "runs"),
           "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir)}
    env.pop("OBAI_DEMO_FAULTS", None)
    ledger = PanelPlayer(REPO, REPO / "SKILL.md", in_this_environment(env), tmp_path, filters="--id " + ",".join(UNITS)).play()
    assert sum(1 for c in ledger.calls if c.what.startswith("judge_packets")) == 1  # the panel ran
    chat_dir = Path(ledger.run_dir)
    headless_dir = _headless_copy(chat_dir, env)
    chat, headless = _units(chat_dir), _units(headless_dir)

    assert set(chat) == set(headless) == set(UNITS)
    differing = []
    for unit in UNITS:
        c, h = chat[unit], headless[unit]
        assert c["rule_outcomes"] == h["rule_outcomes"], unit  # the same mechanical outcomes
        assert c["mechanical"] == h["mechanical"], unit
        assert c["not_asked"] == [] and c["judged_by"] != "mechanical", unit  # the chat asked everything
        assert h["judged_by"] == "mechanical"
        if (c["verdict"], c["reasons"]) != (h["verdict"], h["reasons"]):
            differing.append(unit)
            assert set(c["reasons"]) ^ set(h["reasons"]) <= set(h["not_asked"]), unit
        if h["not_asked"]:
            assert not re.match(r"All \d+ applicable rules passed", h["judgment"]), h["judgment"]
            assert f"not asked (no judge): {', '.join(h['not_asked'])}" in h["judgment"]
        else:
            assert (c["verdict"], c["reasons"]) == (h["verdict"], h["reasons"]), unit
    assert differing == ["F5"], differing
    assert (chat["F5"]["verdict"], chat["F5"]["reasons"]) == ("needs_review", [Q])
    assert (headless["F5"]["verdict"], headless["F5"]["not_asked"]) == ("pass", [Q, F])
    assert headless["R1"]["not_asked"] == []  # a refusal leaves no question
    asked = {u for u in UNITS if headless[u]["not_asked"]}
    assert asked == set(UNITS) - {"R1"}

    cs = load_results(chat_dir / "results.json")["summary"]
    hs = load_results(headless_dir / "results.json")["summary"]
    assert (cs["questions_not_asked"], cs["units_not_asked"]) == (0, 0)
    unasked = sum(len(headless[u]["not_asked"]) for u in UNITS)
    assert (hs["questions_not_asked"], hs["units_not_asked"]) == (unasked, len(asked)) and unasked > len(asked)
    assert "not asked" not in (chat_dir / "report.md").read_text(encoding="utf-8").split("| ID |")[0]
    assert f"**{unasked} judgment question(s) not asked**" in (headless_dir / "report.md").read_text(encoding="utf-8")
