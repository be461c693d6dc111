"""In an interactive terminal people get lines, not JSON; a pipe or --json gets the JSON document; errors once."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from obai_e2e.cli import main
from obai_e2e.report.ci_summary import summary_markdown

REPO = Path(__file__).resolve().parents[2]


def in_terminal(*args: str) -> tuple[int, str]:
    """``obai-e2e ARGS`` with stdout and stderr on a pseudo-terminal: (exit code, what the terminal showed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "obai_e2e", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_an_error_in_a_terminal_is_one_line(tmp_path):
    code, shown = in_terminal("run", "--resume", str(tmp_path / "nowhere"))
    assert code == 2
    assert shown.count("does not exist") == 1 and "{" not in shown, shown


def test_an_error_in_a_pipe_is_also_a_json_document(tmp_path, capsys):
    assert main(["run", "--resume", str(tmp_path / "nowhere")]) == 2
    out, err = capsys.readouterr()
    assert "does not exist" in json.loads(out)["message"] and err.count("does not exist") == 1


def test_json_is_asked_for_in_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["run", "--resume", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().out == ""
    assert main(["run", "--json", "--resume", str(tmp_path / "nowhere")]) == 2
    assert json.loads(capsys.readouterr().out)["error"]


def test_a_summary_without_report_html_points_at_report_md(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"run": {"run_id": "r"}, "summary": {
        "pass": 1, "fail": 0, "needs_review": 0, "inconclusive": 0}}))
    assert summary_markdown(run).endswith(f"Report: {run / 'report.md'}\n")
    (run / "report.html").write_text("<!DOCTYPE html>")
    assert summary_markdown(run).endswith(f"Report: {run / 'report.html'}\n")


def test_new_run_and_finalize_print_one_compact_shape(tmp_path):
    """new-run: one key per line, a list of unit ids on one line; finalize in a pipe: the JSON document alone
    (its summary line and paths are in it), nothing after it on either stream."""
    env = {**os.environ, "OBAI_E2E_RUNS": str(tmp_path / "runs")}
    env.pop("OBAI_E2E_TARGET", None)
    made = subprocess.run([sys.executable, "-m", "obai_e2e", "new-run", "--id", "MD1,S1,R1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    out = json.loads(made.stdout)
    assert out["pending"] == ["MD1", "S1.r1", "S1.r2", "S1.r3", "R1"] and out["units"] == 5
    assert len(made.stdout.splitlines()) == len(out)
    done = subprocess.run([sys.executable, "-m", "obai_e2e", "finalize", "--run-dir", out["run_dir"],
                           "--allow-incomplete"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # the whole of stdout is one document
    assert doc["summary_line"] and doc["report_md"]
    assert "report.md:" not in done.stderr and doc["summary_line"] not in done.stderr
