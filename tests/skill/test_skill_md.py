"""SKILL.md cannot drift from the scripts: its frontmatter follows the open skill spec,
and every command in its code blocks runs, in document order, against the demo."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt
from obai_e2e.report.results import load_results

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
    assert len(SKILL.read_text().splitlines()) < 500
    for ref in set(re.findall(r"references/[a-z0-9-]+\.md", body)):
        assert (REPO / ref).exists(), ref


def test_the_skill_folder_exposes_the_bundle():
    for name in ("SKILL.md", "scripts", "references", "schemas", "catalogs", "cases", "pyproject.toml", "uv.lock"):
        assert (SKILL_DIR / name).exists(), name
    assert (SKILL_DIR / "SKILL.md").resolve() == SKILL.resolve()


def blocks() -> list[str]:
    tokens = MarkdownIt("commonmark").parse(SKILL.read_text(encoding="utf-8"))
    return [t.content for t in tokens if t.type == "fence" and t.info.strip() == "bash"]


def test_blocks_use_the_skill_dir_everywhere():
    for block in blocks():
        for line in block.splitlines():
            if "scripts/" in line:
                assert '"${CLAUDE_SKILL_DIR}/scripts/' in line and '--project "${CLAUDE_SKILL_DIR}"' in line, line


def sh(command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def commands_of(block: str) -> list[str]:
    """Commands of a block; a heredoc stays with its command."""
    out, current, heredoc = [], [], None
    for line in block.splitlines():
        current.append(line)
        if heredoc:
            if line.strip() == heredoc:
                out.append("\n".join(current))
                current, heredoc = [], None
            continue
        m = re.search(r"<<'?(\w+)'?\s*$", line)
        if m:
            heredoc = m.group(1)
            continue
        out.append("\n".join(current))
        current = []
    return out


# Units of the SKILL.md run: two clean ones and two with a demo fault each, and the verdict a
# judge following "How to judge" must record for each.
EXPECTED = {"MD1": ("pass", []), "R1": ("pass", []),
            "S4": ("fail", ["specialist.strategy.zero_trades"]),
            "MD5": ("needs_review", ["hub.unverified_number:987.65"])}
FAULTS = "zero_trades@RSI(21) on KO,ungrounded_number@50-day moving average of AMZN"


def judge_as_skill_md_says(check: dict) -> dict:
    """The verdict "How to judge" asks for, from check_case's output (a judge who agrees with every rule)."""
    verdict, reasons = check["verdict"], check["reasons"]
    answers = {"hub.incomplete_answer": "yes"}
    for q in check["questions"]:
        if q["id"].startswith("hub.unverified_number:"):
            answers[q["id"]] = "confirmed"
    return {"schema_version": 1, "unit_id": check["unit_id"], "verdict": verdict, "reasons": reasons,
            "judgment": check["judgment"], "judged_by": "claude", "answers": answers}


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
    state: dict = {}
    seen = []

    def fill(cmd: str, unit: str | None = None, judge: str = "J1") -> str:
        out = cmd.replace("<RUN_DIR>", state.get("run_dir", "<RUN_DIR>"))
        if unit:
            out = out.replace("<ID>", unit)
        out = out.replace("--judge J1", f"--judge {judge}").replace("<MODEL>", "scripted-judge")
        return out.replace("<REPLY_FILE>", str(tmp_path / f"reply-{judge}.json"))

    for block in blocks():
        for cmd in commands_of(block):
            script = re.search(r"scripts/(\w+\.py)", cmd).group(1)
            seen.append(script)
            if script == "run_one.py":
                runs = [fill(cmd, u) for u in state["pending"]]
            elif script == "check_case.py":
                runs = [fill(cmd, u) for u in state["units"]]
            elif script == "record_verdict.py":
                runs = []
                for u in state["units"]:
                    verdict = json.dumps(judge_as_skill_md_says(state["checks"][u]))
                    runs.append(re.sub(r"<<'EOF'\n.*\nEOF", lambda _: f"<<'EOF'\n{verdict}\nEOF", fill(cmd, u), flags=re.S))
            elif script == "judge_response.py":
                bundle = Path(state["run_dir"]) / "judging" / "r1" / "bundle.md"
                runs = []
                for judge in ("J1", "J2", "J3"):
                    reply = subprocess.run([sys.executable, str(REPO / "tests" / "scripted_judge.py"), str(bundle)],
                                           env={**env, "OBAI_JUDGE_LABEL": judge}, capture_output=True, text=True)
                    (tmp_path / f"reply-{judge}.json").write_text(reply.stdout)
                    runs.append(fill(cmd, judge=judge))
            else:
                runs = [fill(cmd)]
            for run in runs:
                done = sh(run, env)
                assert done.returncode == 0, f"{run}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                out = json.loads(done.stdout)
                if script == "new_run.py":
                    state.update(run_dir=out["run_dir"], pending=out["pending"], units=out["pending"], checks={})
                if script == "check_case.py":
                    state["checks"][out["unit_id"]] = out
                if script == "preflight.py":
                    assert out["status"] == "ready"
                if script == "record_verdict.py":
                    assert (out["verdict"], out["reasons"]) == EXPECTED[out["unit_id"]], out
                if script == "finalize_run.py":
                    state["final"] = out
                if script == "judge_panel.py":
                    assert out["replies"] == 3 and out["round"] == "r2" and out["agreement"]["items"] > 0, out
    assert seen[:3] == ["preflight.py", "new_run.py", "plan.py"]
    final = state["final"]
    assert final["summary_line"].startswith("2 pass / 1 fail / 1 needs_review / 0 inconclusive"), final
    recorded = {u: json.loads((Path(state["run_dir"]) / f"{u}.verdict.json").read_text()) for u in EXPECTED}
    assert {u: (v["verdict"], v["reasons"]) for u, v in recorded.items()} == EXPECTED
    run_dir = Path(state["run_dir"])
    for name in ("results.json", "results.junit.xml", "report.html", "report.md", "seal.json"):
        assert (run_dir / name).exists(), name
    assert opened.read_text().strip().endswith("report.html")
    results = load_results(run_dir / "results.json")
    assert all(u["judged_by"] == "claude" for u in results["units"])
    panel = [u for u in results["units"] if u["judge_panel"]]
    assert panel and panel[0]["judge_panel"]["majority"]["hub.incomplete_answer"] == "complete"
    assert "judge_panel.py" in seen and results["judges"]["round"] == "r2" and results["judges"]["configured"]
