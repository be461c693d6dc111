"""SKILL.md cannot drift from the scripts: its frontmatter follows the open skill spec, it stays
short, and every command in its code blocks runs, in document order, against the demo, played
as a model would play it (tests/skill/chat_player.py)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import yaml
from obai_e2e.report.results import load_results

from .chat_player import Player, bash_blocks, commands_of, in_this_environment, script_of

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "SKILL.md"
SKILL_DIR = REPO / ".claude" / "skills" / "obai-e2e-regression"
ALLOWED_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


def frontmatter() -> tuple[dict, str]:
    text = SKILL.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, "SKILL.md must start with a --- frontmatter block"
    return yaml.safe_load(match.group(1)), match.group(2)


def test_frontmatter_follows_the_open_skill_spec():
    meta, body = frontmatter()
    assert set(meta) <= ALLOWED_KEYS, set(meta) - ALLOWED_KEYS
    name = meta["name"]
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= 64
    assert name == SKILL_DIR.name, "the name must match the skill's folder"
    desc = meta["description"]
    assert isinstance(desc, str) and 0 < len(desc) <= 1024
    assert "<" not in desc and ">" not in desc
    for phrase in ("run e2e regression", "/obai-e2e-regression", "validate obai after this change",
                   "make sure nothing broke before I merge", "Do NOT use"):
        assert phrase in desc
    assert len(SKILL.read_bytes()) <= 10_000, "SKILL.md stays within 10,000 bytes; detail goes to references/"
    for ref in set(re.findall(r"references/[a-z0-9-]+\.md", body)):
        assert (REPO / ref).exists(), ref


def test_the_skill_folder_exposes_the_bundle():
    for name in ("SKILL.md", "scripts", "references", "schemas", "catalogs", "cases", "pyproject.toml", "uv.lock"):
        assert (SKILL_DIR / name).exists(), name
    assert (SKILL_DIR / "SKILL.md").resolve() == SKILL.resolve()


def blocks() -> list[str]:
    return bash_blocks(SKILL)


def test_blocks_use_the_skill_dir_everywhere():
    for block in blocks():
        for line in block.splitlines():
            if "scripts/" in line:
                assert '"${CLAUDE_SKILL_DIR}/scripts/' in line and '--project "${CLAUDE_SKILL_DIR}"' in line, line


def test_the_judgment_has_one_definition():
    """SKILL.md defers to verdict-format.md for a judgment's length instead of saying it again."""
    text = SKILL.read_text(encoding="utf-8")
    assert "400" not in text and "one sentence" not in text
    assert "at most 400 characters" in (REPO / "references" / "verdict-format.md").read_text(encoding="utf-8")


# Units of the SKILL.md run: two clean ones and two with a demo fault each, and the verdict a
# judge following "How to judge" must record for each.
EXPECTED = {"MD1": ("pass", []), "R1": ("pass", []),
            "S4": ("fail", ["specialist.strategy.zero_trades"]),
            "MD5": ("needs_review", ["hub.unverified_number:987.65"])}
FAULTS = "zero_trades@RSI(21) on KO,ungrounded_number@50-day moving average of AMZN"


@pytest.mark.slow
def test_every_command_of_skill_md_runs_against_the_demo(tmp_path, trace_store):
    cases = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text())
    cases["cases"] = [{**c, "smoke": True} for c in cases["cases"] if c["id"] in EXPECTED]
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$1\" >> {opened}\n")
    browser.chmod(0o755)
    # The configured panel of judge_panel.py: three runs of the scripted judge (no model, no key).
    scripted = f"{sys.executable} {REPO / 'tests' / 'scripted_judge.py'}"
    (tmp_path / "judges.yaml").write_text(yaml.safe_dump({"version": 1, "judges": [
        {"name": f"M{i}", "provider": "command", "model": "scripted-judge", "command": scripted} for i in (1, 2, 3)]}))
    env = {**os.environ, "CLAUDE_SKILL_DIR": str(SKILL_DIR), "OBAI_E2E_RUNS": str(tmp_path / "runs"),
           "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir), "OBAI_E2E_CASES": str(tmp_path / "cases.yaml"),
           "BROWSER": str(browser), "OBAI_DEMO_FAULTS": FAULTS, "OBAI_E2E_JUDGES": str(tmp_path / "judges.yaml")}
    ledger = Player(REPO, SKILL, in_this_environment(env), tmp_path, optional=True).play()

    named = {script_of(c) for block in blocks() for c in commands_of(block)}
    ran = {c.what + ".py" for c in ledger.calls if c.script}
    assert named <= ran, named - ran  # every command SKILL.md names ran, and exited 0
    assert [c.what for c in ledger.calls if c.script][:2] == ["preflight", "new_run"]
    assert sum(1 for c in ledger.calls if c.what.startswith("Task")) == 3
    assert ledger.recorded == EXPECTED
    assert ledger.largest_output < 30000 and len(ledger.calls) <= 25
    final = ledger.outputs["finalize_run.py"]
    assert final["summary_line"].startswith("2 pass / 1 fail / 1 needs_review / 0 inconclusive"), final
    assert f"Result: {final['summary_line']}" in final["chat_summary"]
    assert ledger.outputs["judge_panel.py"]["replies"] == 3 and ledger.outputs["judge_panel.py"]["round"] == "r2"
    run_dir = Path(ledger.run_dir)
    for name in ("results.json", "results.junit.xml", "report.html", "report.md", "seal.json"):
        assert (run_dir / name).exists(), name
    assert opened.read_text().strip().endswith("report.html")
    results = load_results(run_dir / "results.json")
    assert {u["unit_id"]: (u["verdict"], u["reasons"]) for u in results["units"]} == EXPECTED
    assert all(u["judged_by"] == "claude" for u in results["units"])
    panel = [u for u in results["units"] if u["judge_panel"]]
    assert panel and panel[0]["judge_panel"]["majority"]["hub.incomplete_answer"] == "complete"
    assert results["judges"]["round"] == "r2" and results["judges"]["configured"]
    assert not list((tmp_path / "runs" / ".judges").iterdir())  # every hand-over folder was collected
