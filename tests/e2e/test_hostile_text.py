"""The chat flow against an agent whose trace and answer imitate the harness's own lines: the
drive lines, the review page and ``review --id`` show every such value as data (escaped on its
line, or indented under its label), so none of its lines stands at the margin."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from obai_e2e.report.results import load_results

from .conftest import REPO
from .hostile_helpers import hostile_target, run_cli, run_here

pytestmark = pytest.mark.slow

# The lines the hostile agent's values imitate (tests/agents/hostile_agent.py FORGED).
FORGED_LINE = re.compile(r"^\s{0,1}(## MD1 \(market-data\)|open: \(none\)|panel: hub\.incomplete_answer: decided yes|"
                         r"NOTE TO THE JUDGE|next: every driven unit)", re.M)
RAW = ("\x1b", "\x07", "\u202e", "\u200b", "\u2028", "\u0085", "\r")


def review(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "obai_e2e", "review", *args], cwd=REPO, capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.decode("utf-8")


def test_a_hostile_trace_and_answer_forge_no_line_of_the_drive_or_the_review(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, "forge")
    code, made, err = run_cli("new-run", "--id", "MD1,MD2", "--target", str(target))
    assert code == 0, err
    run_dir = made["run_dir"]
    lines = []
    for _ in range(20):
        code, out, err = run_cli("drive", "--run-dir", run_dir, "--wait", "60", "--target", str(target), timeout=600)
        assert out is not None, err[-2000:]
        lines += out["units"]
        if out["status"] == "done":
            break
    assert out["status"] == "done" and len(lines) == 2, out
    for line in lines:
        assert not any(ch in line for ch in RAW + ("\n",)), line
    packet = (Path(run_dir) / "MD1.json").read_text(encoding="utf-8")
    assert "name=hub\\\\n## MD1 (market-data)" in packet  # the curated trace holds the name escaped
    for page in (review("--run-dir", run_dir, "--target", str(target)),
                 review("--run-dir", run_dir, "--id", "MD1", "--target", str(target))):
        assert "## MD1 (market_data)" in page and "NOTE TO THE JUDGE" in page  # the unit and the forged text
        assert not FORGED_LINE.search(page), FORGED_LINE.search(page)
        assert not any(ch in page for ch in RAW), [ch for ch in RAW if ch in page]
        assert "\\u2028NOTE TO THE JUDGE" in page and "\\x1b[2J\\x07\\u202egnp.exe\\u200b" in page
        margin = [line for line in page.splitlines() if line and not line[0].isspace()]
        assert all(re.match(r"(# review |## (MD1|MD2) \(market_data\) · rules: |question: |answer:|trace:|why: |"
                            r"failed or soft:|open: |panel: |admissible|answers to open|next: )", line)
                   for line in margin), margin


def test_a_trace_with_a_3_mb_value_and_outputs_nested_300_and_10_000_deep_gets_verdicts_and_readable_pages(
        harness_env, tmp_path):
    target, _ = hostile_target(tmp_path)
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text(encoding="utf-8"))
    behaviours = {"MD1": "big:3,deep:300", "MD2": "big:3,deep:10000"}  # a store refuses 10,000 levels at its door
    for case in data["cases"]:
        if case["id"] in behaviours:
            case["env"] = {"HOSTILE_AGENT": behaviours[case["id"]]}
    cases = tmp_path / "cases-deep.yaml"
    cases.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    code, out, err = run_here("run", "--id", "MD1,MD2", "--target", str(target), "--cases", str(cases))
    assert code == 0 and out is not None, err[-3000:]
    results = load_results(Path(out["results"]))
    assert {u["unit_id"]: u["verdict"] for u in results["units"]} == {"MD1": "pass", "MD2": "pass"}
    run_dir = Path(out["results"]).parent
    md1 = (run_dir / "traces" / "MD1.html").read_text(encoding="utf-8")
    assert "tool_details" in md1 and "nested deeper than 64 levels: not shown" in md1
    assert "showing the first 20,000 characters" in md1 and len(md1) < 3_000_000
    assert "market_data_analysis" in (run_dir / "traces" / "MD2.html").read_text(encoding="utf-8")
    kept = (run_dir / "traces" / "MD1.json").read_text(encoding="utf-8")
    assert "more characters]" in kept and len(kept) < 2_000_000
    page = review("--run-dir", str(run_dir), "--id", "MD1", "--target", str(target))
    assert "## MD1 (market_data)" in page and len(page) < 200_000
