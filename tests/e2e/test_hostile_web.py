"""A hostile web UI on the ui channel: every question ends within its time, nothing outlives the run.

One headless run against tests/agents/hostile_web.py (the harness starts it, as it starts
``obai-demo serve``), six units of one question each, one after the other:

* W1: the server kills the harness's Chromium while the question is asked; the browser is
  launched again and the question asked again: the unit passes;
* W2: the page blocks its own event loop once the answer arrives; the harness ends the
  browser from outside after the unit's timeout_s and a grace: not a pass, and bounded;
* W3: a 3 MB answer is kept to its first 1 MB, as a CLI answer is (hub.answer_truncated); the
  case gives its unit more time of its own (timeout_s 60);
* W4: Chromium is killed on both tries: that unit's ui_outage, and only that unit's;
* W5: the Playwright driver is stopped (SIGSTOP) while the question is asked: it neither
  answers nor dies; the harness ends the browser, then the driver, within the unit's time and
  its graces: not a pass, and the next unit gets a new driver;
* W6: a plain question after all that passes.

The server also leaves a ``setsid`` grandchild that ignores SIGTERM and works outside its
sandbox: it is ended with the run, like everything else the run started.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from obai_e2e.drive.browser import UNWIND_S
from obai_e2e.report.results import load_results

from .conftest import REPO, need_chromium
from .hostile_helpers import cli, hostile_target, marked, run_cli, sandboxes, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WEB = REPO / "tests" / "agents" / "hostile_web.py"
TIMEOUT_S = 5
BEHAVIOURS = {"(w1)": "crash_once", "(w2)": "stall", "(w3)": "huge:3", "(w4)": "crash_always",
              "(w5)": "freeze_driver"}


def web_cases(tmp: Path) -> Path:
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text(encoding="utf-8"))
    md1 = next(c for c in data["cases"] if c["id"] == "MD1")
    cases = []
    for n in range(1, 7):
        case = {**md1, "id": f"W{n}", "query": f"What is the latest price of AAPL? (w{n})", "channels": ["ui"]}
        if n == 3:
            case["timeout_s"] = 60  # a unit's own time: drawing megabytes of text takes a while
        case.pop("smoke", None)
        case["labels"] = {k: v for k, v in md1["labels"].items() if k != "channel"}
        cases.append(case)
    path = tmp / "web-cases.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def web_run(harness_env, tmp_path_factory):
    need_chromium()
    tmp = tmp_path_factory.mktemp("web")
    target, mark = hostile_target(tmp, **{
        "ui.server.command": [sys.executable, str(WEB)], "ui.timeout_s": TIMEOUT_S,
        "target.env.HOSTILE_WEB": json.dumps(BEHAVIOURS), "target.env.HOSTILE_WEB_START": "daemon"})
    runner = f"hostile-runner-{uuid.uuid4().hex[:12]}"  # in the environment of everything the run starts
    # The crashes are the server killing the harness's browser, which a contained server cannot even see:
    # these crashes are staged with containment off (test_hostile_containment.py covers it on).
    code, out, err = run_cli("run", "--target", str(target), "--cases", str(web_cases(tmp)), "--no-html",
                             env={**os.environ, "HOSTILE_RUNNER": runner, "OBAI_E2E_TURN_CONTAINMENT": "none"},
                             timeout=600)
    assert out and out.get("results"), (code, err[-3000:])
    run_dir = Path(out["results"]).parent
    units = {u["unit_id"]: u for u in load_results(Path(out["results"]))["units"]}
    packets = {uid: json.loads((run_dir / f"{uid}.json").read_text(encoding="utf-8")) for uid in units}
    return {"code": code, "err": err, "units": units, "packets": packets, "run_dir": run_dir,
            "left": marked(runner) + marked(mark), "sandboxes": sandboxes(harness_env)}


def test_a_browser_crash_costs_one_retry_not_the_unit(web_run):
    w1 = web_run["units"]["W1.ui"]
    assert (w1["verdict"], w1["reasons"]) == ("pass", []), w1
    assert web_run["packets"]["W1.ui"]["ui"]["attempts"] == 2


def test_a_page_that_blocks_its_event_loop_is_ended_within_its_time(web_run):
    w2, packet = web_run["units"]["W2.ui"], web_run["packets"]["W2.ui"]
    assert w2["verdict"] == "fail", w2
    assert (packet["ui"]["state"], packet["ui"]["browser"]) == ("timeout", "ended")
    # The unit's time, the read grace, and the browser's end: never the 30 s of a Playwright default, nor forever.
    assert packet["turn"]["wall_ms"] < (TIMEOUT_S + 5 + 10) * 1000, packet["turn"]
    tripped = {o["rule"] for o in w2["rule_outcomes"] if o["status"] == "fail"}
    assert "ui.answer_not_rendered" in tripped, tripped  # the agent answered (its trace), the page never showed it
    assert w2["reasons"] == ["ui.answer_not_rendered"], w2


def test_a_huge_web_answer_is_capped_like_a_cli_answer(web_run):
    w3 = web_run["units"]["W3.ui"]
    assert "hub.answer_truncated" in w3["reasons"] and w3["verdict"] != "pass", w3
    packet = web_run["packets"]["W3.ui"]
    ui = packet["ui"]
    assert ui["answer_truncated"] and ui["answer_bytes"] == 3 * 1024 * 1024
    for kept in (ui["answer"], packet["turn"]["stdout"], packet["answer"]):  # the page's, the turn's, the rules'
        assert len(kept.encode("utf-8")) <= 1_000_000
    assert (web_run["run_dir"] / "W3.ui.json").stat().st_size < 3.2 * 1_000_000


def test_a_browser_that_crashes_twice_is_that_units_outage_only(web_run):
    w4 = web_run["units"]["W4.ui"]
    assert (w4["verdict"], w4["reasons"]) == ("inconclusive", ["ui_outage"]), w4
    assert "crashed" in w4["judgment"]


def test_a_driver_that_stops_answering_is_ended_and_replaced(web_run):
    w5, packet = web_run["units"]["W5.ui"], web_run["packets"]["W5.ui"]
    assert w5["verdict"] != "pass", w5
    assert (packet["ui"]["state"], packet["ui"]["browser"]) == ("timeout", "ended"), packet["ui"]
    # The unit's time, the read grace, the wait for the call to unwind, the driver's end: bounded.
    assert packet["turn"]["wall_ms"] < (TIMEOUT_S + 5 + UNWIND_S + 10) * 1000, packet["turn"]
    w6 = web_run["units"]["W6.ui"]  # a new driver, a new browser
    assert (w6["verdict"], w6["reasons"]) == ("pass", []), w6


def test_nothing_the_run_started_outlives_it(web_run):
    assert not web_run["left"], web_run["left"]  # the browser, its driver, the server, its setsid grandchild
    assert not web_run["sandboxes"]
    assert "Traceback" not in web_run["err"]


def test_ctrl_c_during_a_ui_question_leaves_it_pending_and_nothing_running(harness_env, tmp_path):
    """SIGINT while the page holds the question: exit 130 with the command that resumes, no packet for
    the unit, no browser, driver or server left; the resumed run asks the question again."""
    need_chromium()
    log = tmp_path / "asked.log"
    target, mark = hostile_target(tmp_path, **{
        "ui.server.command": [sys.executable, str(WEB)], "ui.timeout_s": 8,
        "target.env.HOSTILE_WEB": json.dumps({"(w1)": "stall"}), "target.env.HOSTILE_WEB_LOG": str(log)})
    runner = f"hostile-runner-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "HOSTILE_RUNNER": runner}
    args = ("run", "--target", str(target), "--cases", str(web_cases(tmp_path)), "--id", "W1", "--no-html")
    proc = cli(*args, env=env)
    assert wait_for(lambda: log.exists() or proc.poll() is not None, 120, step=0.05), "the question was never asked"
    assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err.decode(), err.decode()[-2000:]
    data = json.loads(out)
    run_dir = Path(data["run_dir"])
    assert data["resume_command"] in err.decode()
    assert not list(run_dir.glob("W1.ui*.json"))  # the question in flight stays pending
    assert wait_for(lambda: not marked(runner) and not marked(mark), 10), marked(runner) + marked(mark)
    assert not sandboxes(harness_env)

    code, done, err = run_cli(*args, env=env, timeout=300)
    assert code == 1 and done and Path(done["run_dir"]) == run_dir, err[-2000:]
    assert "resuming" in err
    packet = json.loads((run_dir / "W1.ui.json").read_text(encoding="utf-8"))
    assert packet["ui"]["state"] == "timeout"  # asked again, and the page stalled again
    assert log.read_text(encoding="utf-8").count("(w1)") == 2
