"""Upgrading a target.yaml of the previous release: one preflight lists every change, and those changes suffice.

The fixture is the ledger agent's target.yaml as the previous release read it (dotted paths, pointers
from inside the span's output, paths relative to the bundle). One ``obai-e2e preflight`` must name
each problem with its line, its field and the value to write; writing exactly those values (nothing
else) must make the same preflight ready: configuration, cases, command, catalog, plan, sandbox,
version command, runs folder and trace store.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from obai_e2e import cli
from obai_e2e.base import jsonptr

REPO = Path(__file__).resolve().parents[2]
PREVIOUS = Path(__file__).parent / "data" / "ledger-target.previous-release.yaml"
CASES = REPO / "examples" / "ledger-agent" / "cases.yaml"


def preflight(capsys, target: Path, *extra: str) -> tuple[int, dict]:
    code = cli.main(["preflight", "--target", str(target), "--cases", str(CASES), *extra])
    return code, json.loads(capsys.readouterr().out)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def apply(path: Path, problems: list[dict]) -> None:
    """Write each problem's value at its field, and nothing else."""
    data = yaml.safe_load(path.read_text())
    for p in problems:
        *parent, last = jsonptr.parse(p["field"])
        node = data
        for key in parent:
            node = node[int(key) if isinstance(node, list) else key]
        node[int(last) if isinstance(node, list) else last] = p["write"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_one_preflight_lists_every_change_and_applying_them_makes_it_ready(tmp_path, capsys, trace_store,
                                                                           monkeypatch):
    monkeypatch.setenv("OBAI_TRACE_STORE_DIR", str(trace_store.data_dir))
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    target = tmp_path / "team-repo" / "e2e" / "target.yaml"
    target.parent.mkdir(parents=True)
    shutil.copy2(PREVIOUS, target)

    code, out = preflight(capsys, target, "--no-start")
    assert code == 4 and out["checks"][0]["name"] == "target_config"
    problems = out["problems"]
    changed = {p["field"]: p["write"] for p in problems}
    assert changed == {
        "/vocabulary/guardrail_allowed_field": "/output/decision",
        "/vocabulary/skill_name_field": "/metadata/toolkit",
        "/vocabulary/specialist_output/text": "/output/body",
        "/vocabulary/specialist_output/data": "/output/figures",
        "/vocabulary/specialist_output/errors/0/pointer": "/output/status",
        "/vocabulary/specialist_output/errors/0/message": "/output/detail",
        "/vocabulary/options_payload/max_loss": "/output/figures/max_loss",
        "/vocabulary/options_payload/breakevens": "/output/figures/breakevens",
        "/vocabulary/final_response_field": "/output/final/text",
        "/run/catalog": "{bundle}/catalogs/loss-catalog.v1.json",
        "/run/plan": "{bundle}/examples/ledger-agent/plan.yaml",
    }
    for p in problems:  # each names its line and says what to write
        needle = p["field"].rsplit("/", 1)[-1] + ":" if not p["field"].endswith(("/pointer", "/message")) else "pointer:"
        assert p["where"] == f"{target}:{line_of(target, needle)}", p
        assert repr(p["write"]) in p["message"], p
    assert out["reason"].startswith(f"{target}: 11 problems (change all of them, then run again):")
    assert "{bundle}" in changed["/run/catalog"] and "{bundle}/… starts at the harness bundle" in out["reason"]

    apply(target, problems)
    code, out = preflight(capsys, target)
    assert code == 0 and out["status"] == "ready", out["reason"]
    assert [c["name"] for c in out["checks"] if not c["ok"]] == []


def test_preflight_finds_a_relative_command_where_the_turns_start_it(tmp_path, capsys, monkeypatch):
    """target.command[0] with a slash is started in target.workdir (relative to the target file), not in the
    directory preflight runs from."""
    agent = tmp_path / "repo" / "agent"
    agent.mkdir(parents=True)
    (agent / "run-agent").write_text("#!/bin/sh\nexec ledger-agent \"$@\"\n")
    (agent / "run-agent").chmod(0o755)
    text = (REPO / "examples" / "ledger-agent" / "target.yaml").read_text()
    text = text.replace('command: ["ledger-agent", "chat"', 'workdir: ../agent\n  command: ["./run-agent", "chat"')
    text = text.replace("plan: plan.yaml", "plan: \"{bundle}/examples/ledger-agent/plan.yaml\"")
    fresh = text
    text = text.replace("fresh_workdir: true", "fresh_workdir: false")
    target = tmp_path / "repo" / "e2e" / "target.yaml"
    target.parent.mkdir()
    target.write_text(text)
    monkeypatch.chdir(tmp_path)  # not where the command is
    code, out = preflight(capsys, target, "--no-start")
    command = next(c for c in out["checks"] if c["name"] == "target_command")
    assert command["ok"] and command["detail"] == str(agent / "run-agent"), out
    target.write_text(fresh)  # each turn in a fresh empty folder: no relative command is found there
    code, out = preflight(capsys, target, "--no-start")
    assert code == 4 and "each turn starts in a fresh empty folder (sandbox.fresh_workdir)" in out["reason"]
