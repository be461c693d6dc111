"""Hostile agents and bad run inputs, through ``obai-e2e``: every unit gets a result, nothing hangs or lingers."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt
from obai_e2e.base.mdtable import unescape
from obai_e2e.drive.containment import SWITCH_ENV
from obai_e2e.report.report_md import CHANGES_MARK, read_rows
from obai_e2e.report.results import load_results

from .conftest import REPO

from .hostile_helpers import (
    cli,
    hostile_target,
    marked,
    run_cli,
    run_dirs,
    run_here,
    sandboxes,
    wait_for,
)

pytestmark = pytest.mark.slow


def turns(mark: str) -> list[str]:
    """Processes of turns in flight (the preflight's version command carries the mark too)."""
    return [line for line in marked(mark) if "--session" in line]


def results_of(out: dict) -> dict:
    return load_results(Path(out["results"]))


def unit(results: dict, unit_id: str) -> dict:
    return next(u for u in results["units"] if u["unit_id"] == unit_id)


FORGED_QUERY = ("AAPL pa\u202egnp.exe zero\u200bwidth price? [ALL PASS](https://evil.example/x) "
                "![px](https://evil.example/p.png) <img src=x onerror=alert(1)>")


def hostile_cases(tmp: Path) -> Path:
    """The bundle's cases with MD1 asking a query full of Markdown, HTML and invisible characters."""
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text(encoding="utf-8"))
    next(c for c in data["cases"] if c["id"] == "MD1")["query"] = FORGED_QUERY
    path = tmp / "cases-forged.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def markdown_kinds(text: str) -> list[str]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    return [t.type for tok in tokens for t in (tok, *(tok.children or []))]


def test_a_span_name_outside_the_code_grammar_fails_the_unit_not_the_run(harness_env, tmp_path):
    name = "my tool \x1b[31m &lt;b&gt; \x07"
    target, _ = hostile_target(tmp_path, "error_span:" + name.encode("unicode_escape").decode("ascii"))
    summary = tmp_path / "summary.md"
    code, out, err = run_here("run", "--id", "MD1,MD2", "--target", str(target), "--cases", str(hostile_cases(tmp_path)),
                              "--summary-md", str(summary))
    assert code == 1, err[-2000:]
    results = results_of(out)
    md1 = unit(results, "MD1")
    assert md1["verdict"] == "fail"
    assert md1["reasons"] == ["trace.error_span:my%20tool%20%1B%5B31m%20%26lt%3Bb%26gt%3B%20%07"]
    rule = next(o for o in md1["rule_outcomes"] if o["rule"] == "trace.error_span")
    assert name in rule["evidence"][0]["excerpt"]  # the raw name stays in the evidence
    run_dir = Path(out["results"]).parent
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    for raw in ("\x1b", "\x07", "\x00", "\x7f"):
        assert raw not in report
    assert "\u241b\\[31m \\&lt;b\\&gt; \u2407" in report  # the observed line shows the name, inert
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "\x1b" not in html
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)[1])
    shown = json.dumps(data, ensure_ascii=False)
    # What the page shows (textContent of these strings) is the name's own text: "&lt;b&gt;", not "<b>".
    assert "my tool \u241b[31m &lt;b&gt; \u2407" in shown and "<b>" not in shown
    # Text from the case and the trace renders as its text: no link, image or HTML of its own,
    # no invisible character (the links in report.md are to the traces' pages, which the harness built).
    for text in (report, summary.read_text(encoding="utf-8")):
        kinds = markdown_kinds(text)
        assert "image" not in kinds and kinds.count("html_inline") + kinds.count("html_block") == text.count(CHANGES_MARK)
        assert kinds.count("link_open") == text.count("](traces/") + text.count("](http://127.0.0.1"), text
        assert "\u202e" not in text and "\u200b" not in text
    assert "pa<U+202E>gnp.exe zero<U+200B>width" in unescape(report)
    junit = (run_dir / "results.junit.xml").read_text(encoding="utf-8")
    assert "pa&lt;U+202E&gt;gnp.exe" in junit and "\u202e" not in junit
    assert "\u202e" not in html and "\u200b" not in html and "pa\\u003cU+202E\\u003egnp.exe" in html


def test_a_verdict_that_cannot_be_recorded_is_that_units_harness_error_also_on_resume(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path)
    code, out, err = run_here("new-run", "--id", "MD1,MD2", "--target", str(target))
    assert code == 0, err
    run_dir = Path(out["run_dir"])
    code, packet, err = run_here("run-one", "--id", "MD1", "--run-dir", str(run_dir), "--target", str(target))
    assert code == 0, err
    # A packet the rubric cannot check (as a bug in a rule would make one): the check raises.
    path = run_dir / "MD1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["trace"]["digest"]["specialist_calls"][0]["payload_text"] = 42
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run_here("run", "--resume", str(run_dir), "--target", str(target), "--no-html")
    assert code == 3, err[-2000:]  # inconclusive units, and a finished run
    results = results_of(out)
    md1 = unit(results, "MD1")
    assert md1["verdict"] == "inconclusive" and md1["reasons"] == ["harness_error"]
    assert "could not be recorded" in md1["judgment"] and "TypeError" in md1["judgment"]
    assert unit(results, "MD2")["verdict"] == "pass"
    assert (run_dir / "results.json").exists() and out["seal"]


def test_a_failing_restore_hook_is_recorded(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, **{"sandbox.restore": ["sh", "-c", "echo restore broke >&2; exit 3"]})
    code, out, err = run_here("run", "--id", "MD1", "--target", str(target), "--no-html")
    run_dir = Path(out["results"]).parent
    packet = json.loads((run_dir / "MD1.json").read_text(encoding="utf-8"))
    assert packet["sandbox"]["restore_error"] and "exited 3" in packet["sandbox"]["restore_error"]
    assert "restore broke" in packet["sandbox"]["restore_error"]


def test_an_agent_killed_by_a_signal_is_reported_as_crashed(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, "segv")
    code, out, err = run_here("run", "--id", "MD1", "--target", str(target), "--no-html")
    assert code == 3, err[-2000:]
    md1 = unit(results_of(out), "MD1")
    assert md1["verdict"] == "inconclusive" and md1["reasons"] == ["target_crashed"]
    assert "killed by SIGSEGV (exit -11)" in md1["judgment"] and md1["exit_code"] == -11
    rows = read_rows(Path(out["results"]).parent / "report.md")
    assert rows[0]["Reason"] == "target_crashed"


def test_a_truncated_answer_is_visible_in_the_verdict_and_the_report(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, "huge:20")
    code, out, err = run_here("run", "--id", "MD1", "--target", str(target))
    assert code == 0, err[-2000:]
    run_dir = Path(out["results"]).parent
    md1 = unit(results_of(out), "MD1")
    assert md1["verdict"] == "needs_review" and md1["reasons"] == ["hub.answer_truncated"]
    rule = next(o for o in md1["rule_outcomes"] if o["rule"] == "hub.answer_truncated")
    assert rule["evidence"][0]["excerpt"] == f"answer cut after 1000000 bytes of {20 * 1024 * 1024 + 1}"  # and its newline
    assert read_rows(run_dir / "report.md")[0]["Reason"] == "hub.answer_truncated"
    assert "hub.answer_truncated" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_setsid_daemon_holding_stdout_is_ended_with_the_turn(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "daemon")
    t0 = time.monotonic()
    code, out, err = run_cli("run", "--id", "MD1", "--target", str(target), "--no-html")
    assert code == 0, err[-2000:]
    md1 = unit(results_of(out), "MD1")
    assert md1["verdict"] == "pass"
    packet = json.loads((Path(out["results"]).parent / "MD1.json").read_text(encoding="utf-8"))
    # contained, the daemon ends with its turn's PID namespace; otherwise the sweep kills it
    assert packet["turn"]["contained"] or packet["turn"]["leftovers_killed"] >= 1
    assert packet["turn"]["wall_ms"] < 20_000
    assert not marked(mark), marked(mark)
    assert time.monotonic() - t0 < 120


def test_a_hanging_agent_of_a_sigkilled_runner_is_ended_by_the_resume(harness_env, tmp_path):
    """Uncontained (a contained turn dies with its runner: test_containment_walls.py)."""
    target, mark = hostile_target(tmp_path, "slow:600", **{"target.timeout_s": 300})
    before = set(run_dirs(harness_env))
    runner = cli("run", "--id", "MD1", "--target", str(target), "--no-html",
                 env={**os.environ, SWITCH_ENV: "none"})
    try:
        assert wait_for(lambda: turns(mark), 90), "the agent never started"
        os.kill(runner.pid, signal.SIGKILL)  # the runner only: its agent lives on in a session of its own
        runner.wait()
        time.sleep(0.5)
        assert marked(mark), "the hanging agent should have outlived its runner"
        run_dir = (set(run_dirs(harness_env)) - before).pop()
        clean, _ = hostile_target(tmp_path, "", mark=mark + "-clean")
        code, out, err = run_cli("run", "--resume", str(run_dir), "--target", str(clean), "--no-html")
        assert code == 0, err[-2000:]
        assert wait_for(lambda: not marked(mark), 10), marked(mark)
        assert unit(results_of(out), "MD1")["verdict"] == "pass"
        assert not sandboxes(harness_env)
    finally:
        runner.kill()
        for line in marked(mark):
            os.kill(int(line.split()[0]), signal.SIGKILL)


def test_sigterm_during_turns_leaves_the_units_pending(harness_env, tmp_path):
    target, mark = hostile_target(tmp_path, "slow:30", **{"target.timeout_s": 120})
    before = set(run_dirs(harness_env))
    runner = cli("run", "--id", "MD1,MD2", "--jobs", "2", "--target", str(target), "--no-html")
    assert wait_for(lambda: len(turns(mark)) >= 2, 90), "the agents never started"
    runner.send_signal(signal.SIGTERM)
    runner.wait(timeout=60)
    assert runner.returncode != 0
    run_dir = (set(run_dirs(harness_env)) - before).pop()
    assert not list(run_dir.glob("MD*.json")), "an interrupted unit was recorded"
    assert not marked(mark) and not sandboxes(harness_env)
    clean, _ = hostile_target(tmp_path, "")
    code, out, err = run_cli("run", "--resume", str(run_dir), "--jobs", "2", "--target", str(clean), "--no-html")
    assert code == 0, err[-2000:]
    assert {u["unit_id"]: u["verdict"] for u in results_of(out)["units"]} == {"MD1": "pass", "MD2": "pass"}


def _signal_a_thread_other_than_main(pid: int, sig: int) -> int:
    """Send ``sig`` to one of ``pid``'s threads that is not its main thread (tgkill); its thread id."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if not hasattr(libc, "tgkill"):
        pytest.skip("this C library has no tgkill")
    others = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    assert others, "the runner has no thread but its main one"
    tid = others[-1]
    assert libc.tgkill(pid, tid, sig) == 0, os.strerror(ctypes.get_errno())
    return tid


def test_sigterm_that_lands_on_another_thread_still_stops_the_run_at_once(harness_env, tmp_path):
    # The kernel hands a process's signal to any of its threads that does not block it; Python runs
    # the handler in the main thread only when that thread wakes. Here the signal goes to another
    # thread on purpose: the run must stop as it does for one the main thread gets, not when its
    # turns end (each would take 30 s) and with their units recorded.
    target, mark = hostile_target(tmp_path, "slow:30", **{"target.timeout_s": 120})
    before = set(run_dirs(harness_env))
    runner = cli("run", "--id", "MD1,MD2", "--jobs", "2", "--target", str(target), "--no-html")
    try:
        assert wait_for(lambda: len(turns(mark)) >= 2, 90), "the agents never started"
        _signal_a_thread_other_than_main(runner.pid, signal.SIGTERM)
        try:
            runner.wait(timeout=25)  # well before the turns would end by themselves
        except subprocess.TimeoutExpired:
            pytest.fail("the run did not stop within 25 s of a SIGTERM that one of its threads got")
    finally:
        runner.kill()
    assert runner.returncode == 130, runner.stderr.read().decode()[-2000:]
    run_dir = (set(run_dirs(harness_env)) - before).pop()
    assert not list(run_dir.glob("MD*.json")), "an interrupted unit was recorded"
    assert wait_for(lambda: not marked(mark), 10) and not sandboxes(harness_env)


@pytest.mark.parametrize("which", ["catalog", "plan"])
def test_a_bad_catalog_or_plan_stops_the_run_before_any_unit(harness_env, tmp_path, which):
    broken = tmp_path / "broken-catalog.json"
    broken.write_text('{"version": "v1", "categories": [', encoding="utf-8")
    change = {"run.catalog": str(broken)} if which == "catalog" else {"run.plan": str(tmp_path / "no-such-plan.yaml")}
    expected = f"{broken}:1: not valid JSON" if which == "catalog" else "no-such-plan.yaml"
    target, _ = hostile_target(tmp_path, **change)
    before = set(run_dirs(harness_env))
    code, out, err = run_here("run", "--id", "MD1", "--target", str(target), "--no-html")
    assert code == 4, err[-2000:]
    assert out["status"] == "not_ready" and expected in out["reason"], out["reason"]
    assert set(run_dirs(harness_env)) == before


def test_an_unreadable_baseline_stops_the_run_before_any_unit(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path)
    bad = tmp_path / "baseline.json"
    bad.write_bytes(b'{"schema_version": 1, "units": [NaN]}')
    before = set(run_dirs(harness_env))
    code, out, err = run_here("run", "--id", "MD1", "--target", str(target), "--baseline", str(bad))
    assert code == 4, err[-2000:]
    assert str(bad) in out["reason"] and "not a finite number" in out["reason"]
    assert set(run_dirs(harness_env)) == before


def test_a_missing_workdir_is_named(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, **{"target.workdir": str(tmp_path / "nowhere"),
                                            "sandbox.fresh_workdir": False})
    code, out, err = run_here("preflight", "--target", str(target))
    assert code == 4
    assert "working directory" in out["reason"] and "nowhere" in out["reason"] and "not found" not in out["reason"]


@pytest.mark.parametrize("value", ["-5", "0", "1000000", "two"])
def test_nonsense_job_counts_are_refused(harness_env, value):
    code, out, err = run_here("run", "--id", "MD1", "--jobs", value)
    assert code == 2
    assert "--jobs" in err and ("out of range" in err or "not a whole number" in err)
    assert "Traceback" not in err


def test_jobs_one_runs_one_turn_at_a_time_and_reads_each_trace_behind_the_next_turn(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, "slow:0.3")
    code, out, err = run_here("run", "--id", "MD1,MD2,MD3,F1,R1,O1", "--jobs", "1", "--target", str(target),
                             "--no-html")
    assert code in (0, 1), err[-2000:]
    run_dir = Path(out["results"]).parent
    packets = [json.loads((run_dir / f"{u}.json").read_text()) for u in ("MD1", "MD2", "MD3", "F1", "R1", "O1")]
    packets.sort(key=lambda p: p["turn"]["started_at"])
    for before, after in zip(packets, packets[1:]):
        # One turn of the target at a time (the timestamps share one format, so they sort as text)
        assert after["turn"]["started_at"] >= before["turn"]["ended_at"], (before["unit_id"], after["unit_id"])
    # ... while a unit's trace lookup and teardown ran on after its turn, behind the next unit's turn.
    behind = [b["unit_id"] for b, a in zip(packets, packets[1:])
              if a["turn"]["started_at"] < b["harness"]["ended_at"]]
    assert behind, [(p["unit_id"], p["turn"]["started_at"], p["harness"]["ended_at"]) for p in packets]
    assert all(p["trace"]["status"] == "resolved" for p in packets)


def test_the_entries_kept_while_judging_are_those_the_files_give(harness_env, tmp_path):
    # A run keeps each judged unit's results entry aside and finishes from those; finishing
    # the same run again from its packets and verdicts alone must write the same rows.
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.target import load_target_config
    from obai_e2e.report.finalize import finalize
    from obai_e2e.report.spool import SPOOL
    from obai_e2e.run.plan import plan

    target, _ = hostile_target(tmp_path, "")
    code, out, err = run_here("run", "--id", "MD1,S1,R1,O1,G2", "--target", str(target))
    assert code in (0, 1), err[-2000:]
    run_dir = Path(out["results"]).parent
    rows = (run_dir / "results.units.jsonl").read_bytes()
    assert rows.count(b"\n") == out["summary"]["total"] >= 5 and not (run_dir / SPOOL).exists()
    (run_dir / SPOOL).write_bytes(b'{"torn')  # what a killed run may leave: never read
    for name in ("results.json", "results.units.jsonl", "diff.json"):
        (run_dir / name).unlink(missing_ok=True)
    config = load_target_config(target)
    finalize(config, load_cases_for(config), run_dir, plan(run_dir, load_cases_for(config)).units)
    assert (run_dir / "results.units.jsonl").read_bytes() == rows
    assert not (run_dir / SPOOL).exists()
