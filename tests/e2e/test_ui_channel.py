"""The ui channel end to end: the smoke cases asked through the demo's web chat in Chromium.

Two headless runs (``obai-e2e run`` as a subprocess: the browser is the harness's own) on
the real demo, the local trace store and Debian's Chromium, the eight smoke cases on both
channels, each once:

* clean (the harness starts ``obai-demo serve``): every ui unit gets the verdict and the
  answer its cli twin gets, and the channel is a partition facet;
* the ui units alone, against a web chat the test runs itself, with its faults scoped to one
  case each and an outage at the end: each fault trips its ui rule and lands in its ui
  category; the chat's backend goes down after the last faulted case and the chat stops after
  the next one, so those ui units have no ui categories (unbewertbar, never loss, no abort).

The ui rules one by one, on stored observations, are in tests/harness/test_stages.py.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt
from obai_e2e.base.errors import Exit
from obai_e2e.report.results import load_results

from .conftest import REPO, need_chromium, target_variant
from .conftest import obai_json as obai

pytestmark = [pytest.mark.slow, pytest.mark.heavy(41), pytest.mark.browser]

UI_CATEGORIES = ("ui_rendering", "ui_display", "ui_latency")
UI_RULES = ("ui.answer_not_rendered", "ui.raw_markup", "ui.error_banner", "ui.slow_first_token", "ui.slow_done")
# ui fault -> (case, scope text, the codes it trips)
UI_MATRIX = {
    "ui_error_banner": ("MD1", "latest price of AAPL", {"ui.error_banner"}),
    "ui_truncated": ("F1", "net margin and P/E", {"ui.answer_not_rendered"}),
    "ui_raw_markup": ("S1", "RSI(14) drops below 30", {"ui.raw_markup"}),
    # a stall before the first token also delays the finished answer past its budget
    "ui_slow_first_token": ("P1", "odds the Fed cuts", {"ui.slow_first_token", "ui.slow_done"}),
    "ui_slow_done": ("O1", "naked call on AAPL", {"ui.slow_done"}),
}
STALL_MS = 3000  # above both latency budgets of target.yaml (2000 / 2500 ms)
# The faulted run's units run in case order: MD1.ui, F1.ui, ... O1.ui, M1.ui, R1.ui (one after the
# other: see its snapshot hook).
DOWN_AFTER, STOP_AFTER = "O1.ui", "M1.ui"     # the backend goes down, then the whole chat stops
OUTAGE_UNITS = {"M1.ui": "health check", "R1.ui": "did not load"}


def finished(code: int, out: dict, err: str) -> dict:
    assert out.get("run_dir"), f"exit {code}: {err[-2000:]}"
    run_dir = Path(out["run_dir"])
    results = load_results(run_dir / "results.json")
    return {"code": code, "run_dir": run_dir, "units": {u["unit_id"]: u for u in results["units"]},
            "suite": json.loads((run_dir / "suite.json").read_text())}


@pytest.fixture(scope="module")
def setup(harness_env, tmp_path_factory):
    need_chromium()
    tmp = tmp_path_factory.mktemp("ui")
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text())
    smoke = [c for c in data["cases"] if c.get("smoke")]
    for c in smoke:
        c["channels"] = ["cli", "ui"]
        for key in ("stochastic", "repeats"):
            c.pop(key, None)  # once each: the cli turns are the slow part
        c.get("labels", {}).pop("channel", None)
    cases = tmp / "cases.yaml"
    cases.write_text(yaml.safe_dump({"version": 1, "cases": smoke}, sort_keys=False))
    target = target_variant(tmp, **{"trace_backend.resolve_deadline_s": 6})
    env = {**os.environ}
    env.pop("OBAI_DEMO_FAULTS", None)
    return tmp, target, cases, env


@pytest.fixture(scope="module")
def both(setup):
    _, target, cases, env = setup
    return finished(*obai("run", "--target", str(target), "--cases", str(cases), "--jobs", "2", env=env))


@pytest.fixture(scope="module")
def faulted(setup, both, trace_store):
    tmp, target, cases, env = setup
    faults = ",".join(f"{f}@{scope}" for f, (_, scope, _codes) in UI_MATRIX.items())
    raw = yaml.safe_load(target.read_text())
    chat_env = {**env, **trace_store.sdk_env(), "OPIK_PROJECT_NAME": raw["trace_backend"]["project"],
                "OBAI_DEMO_HOME": str(tmp / "chat-home"), "OBAI_DEMO_ETA_SECONDS": "1",
                "OBAI_DEMO_FAULTS": faults, "OBAI_DEMO_UI_STALL_MS": str(STALL_MS)}
    chat = subprocess.Popen([shutil.which("obai-demo"), "serve", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=chat_env, text=True, start_new_session=True)
    try:
        ready = json.loads(chat.stdout.readline())
        raw["ui"].pop("server")
        raw["ui"]["base_url"] = ready["url"]
        # With a snapshot hook each unit holds its turn slot from its start to its end, so the units
        # run strictly one after the other; the hook's pause at a unit's start lets the watcher below
        # see the packet of the unit before (stored meanwhile) and stage an outage before this unit asks.
        raw["sandbox"]["snapshot"] = ["sleep", "2"]
        own = tmp / "target-own-chat.yaml"
        own.write_text(yaml.safe_dump(raw, sort_keys=False))
        runs = Path(env["OBAI_E2E_RUNS"])
        earlier = set(runs.glob("[0-9]*/*"))  # run folders (DATE/TIME); not the sandboxes beside them
        events: list[str] = []

        def watch() -> None:
            # A unit's packet is stored while the next unit's snapshot hook pauses. Once the run's
            # folder is there, each look is two file checks (not a listing of every run folder).
            deadline = time.monotonic() + 1200
            run_dir: Path | None = None
            while time.monotonic() < deadline:
                if run_dir is None:
                    run_dir = next((d for d in runs.glob("[0-9]*/*") if d not in earlier), None)
                packets = {p.name for p in (run_dir / f"{DOWN_AFTER}.json", run_dir / f"{STOP_AFTER}.json")
                           if p.exists()} if run_dir is not None else set()
                if f"{DOWN_AFTER}.json" in packets and "down" not in events:
                    Path(ready["outage_file"]).parent.mkdir(parents=True, exist_ok=True)
                    Path(ready["outage_file"]).write_text("")
                    events.append("down")
                if f"{STOP_AFTER}.json" in packets and "stopped" not in events:
                    os.killpg(chat.pid, signal.SIGTERM)
                    events.append("stopped")
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        result = finished(*obai("run", "--target", str(own), "--cases", str(cases), "--channel", "ui",
                                "--jobs", "1", env=env))
        watcher.join(5)
    finally:
        if chat.poll() is None:
            os.killpg(chat.pid, signal.SIGKILL)
        chat.wait(10)
    result["events"] = events
    return result


def _tripped(unit: dict) -> set[str]:
    return {c for o in unit["rule_outcomes"] if o["status"] in ("fail", "needs_review")
            for c in (o.get("codes") or [o["code"]])}


def _twin(unit_id: str) -> str:
    return unit_id.replace(".ui", "")


def _parts(suite: dict) -> dict:
    return {p["partition"]: p for p in suite["partitions"]}


# ---------------------------------------------------------------------- clean: the same verdicts


def test_ui_run_gives_the_cli_verdicts(both):
    ui = {uid: u for uid, u in both["units"].items() if u["channel"] == "ui"}
    assert len(ui) == len(both["units"]) / 2 == 8
    for uid, unit in ui.items():
        twin = both["units"][_twin(uid)]
        assert twin["channel"] == "cli"
        assert (unit["verdict"], unit["reasons"]) == (twin["verdict"], twin["reasons"]), uid
        assert unit["trace_status"] == "resolved" and unit["trace_ids"]
        ui_outcomes = {o["rule"]: o["status"] for o in unit["rule_outcomes"] if o["layer"] == 4}
        assert ui_outcomes == {r: "pass" for r in UI_RULES}, uid
        assert not any(o["layer"] == 4 for o in twin["rule_outcomes"])
        if unit["case_id"] != "A1":  # a job id differs by session
            assert unit["answer"] == twin["answer"], uid
    assert both["code"] == Exit.OK


def test_channel_is_a_partition_facet(both):
    parts = _parts(both["suite"])
    ui = parts["channel=ui,provenance=synthetic"]
    assert ui["n"] == 8 and ui["loss"] == 0
    for cat in UI_CATEGORIES:
        assert ui["by_category"][cat]["n"] == 8 and ui["by_category"][cat]["loss"] == 0
    for key, p in parts.items():
        if key.startswith("intent="):
            assert all(p["by_category"][c]["status"] == "unbewertbar" for c in UI_CATEGORIES), key


# ---------------------------------------------------------------------- the web chat's faults, then an outage


def test_each_ui_fault_trips_its_rule_and_nothing_else(faulted):
    assert faulted["events"] == ["down", "stopped"]
    units = faulted["units"]
    for fault, (case_id, _scope, codes) in UI_MATRIX.items():
        unit = units[f"{case_id}.ui"]
        assert _tripped(unit) == codes, (fault, _tripped(unit))
        hard = codes - {"ui.slow_first_token", "ui.slow_done"}
        assert unit["verdict"] == ("fail" if hard else "needs_review"), (fault, unit["verdict"])
    assert units["A1.ui"]["verdict"] == "pass" and not _tripped(units["A1.ui"])
    assert faulted["code"] == Exit.UNIT_FAILED


def test_outage_units_are_named_as_such(faulted):
    for uid, how in OUTAGE_UNITS.items():
        unit = faulted["units"][uid]
        assert (unit["verdict"], unit["reasons"]) == ("inconclusive", ["ui_outage"]), uid
        assert how in unit["judgment"] and "not assessable, never loss" in unit["judgment"], unit["judgment"]


def test_the_faulted_run_asks_the_ui_units_only(faulted):
    assert sorted(faulted["units"]) == sorted(f"{c}.ui" for c in ("MD1", "F1", "S1", "P1", "O1", "A1", "M1", "R1"))


def test_ui_faults_land_in_the_ui_categories_and_the_outage_in_none(faulted):
    suite = faulted["suite"]
    assert suite["counts"]["outage"] == 2 and suite["counts"]["aborted"] == 0
    assert suite["abort_rate"] == 0 and suite["suite_status"] == "scored"
    parts = _parts(suite)
    ui = parts["channel=ui,provenance=synthetic"]
    assert (ui["planned"], ui["completed"], ui["outage"], ui["aborted"]) == (8, 6, 2, 0)
    cats = ui["by_category"]
    for cat in UI_CATEGORIES:
        assert cats[cat]["n"] == 6, cat  # the two outage units count nowhere, not as 0
    assert cats["ui_rendering"]["loss"] == pytest.approx(1 / 6)      # F1
    assert cats["ui_display"]["loss"] == pytest.approx(2 / 6)        # MD1, S1
    assert cats["ui_latency"]["loss"] == pytest.approx((1 + 0.5) / 6)  # P1 both budgets, O1 one
    for cat in ("routing_skills", "specialist_output", "answer_grounding"):
        assert cats[cat]["loss"] == 0
    assert any("upstream outage of the ui channel" in w and "M1.ui" in w and "R1.ui" in w for w in suite["warnings"])


def test_the_report_says_so(faulted):
    html = (faulted["run_dir"] / "report.html").read_text()
    assert "upstream outage of the ui channel" in html and "not assessable, never loss" in html
    tokens = MarkdownIt().enable("table").parse((faulted["run_dir"] / "report.md").read_text())
    cells = [t.content for t in tokens if t.type == "inline"]
    at = cells.index("R1.ui")
    assert cells[at + 2] == "inconclusive" and cells[at + 3] == "ui_outage"
