"""The ui channel end to end: the smoke cases asked through the demo's web chat in Chromium.

Three headless runs on the real demo, the local trace store and Debian's Chromium:

* the smoke cases on both channels (the harness starts ``obai-demo serve``): every ui unit
  gets the verdict its cli twin gets;
* the smoke cases on the ui channel only, with the web chat's faults scoped to one case
  each: each fault trips its ui rule, the rest stay clean;
* three cases on both channels against a web chat the test runs itself: its backend goes
  down after the first ui unit and the chat stops after the second; the ui units then
  have no ui categories (unbewertbar, never loss, no abort) and the cli units are as in
  the first run.
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
from obai_e2e.base.opik_env import local_store_env
from obai_e2e.config.cases import load_cases
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.report.results import load_results
from obai_e2e.run import headless
from obai_e2e.run.finish import after_run

from .conftest import REPO, target_variant

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path("/usr/bin/chromium")
UI_CATEGORIES = ("ui_rendering", "ui_display", "ui_latency")
UI_RULES = ("ui.answer_not_rendered", "ui.raw_markup", "ui.error_banner", "ui.slow_first_token", "ui.slow_done")
# ui fault -> (case, scope text, the codes it trips)
UI_MATRIX = {
    "ui_raw_markup": ("S1", "RSI(14) drops below 30", {"ui.raw_markup"}),
    "ui_error_banner": ("MD1", "latest price of AAPL", {"ui.error_banner"}),
    "ui_truncated": ("F1", "net margin and P/E", {"ui.answer_not_rendered"}),
    # a stall before the first token also delays the finished answer past its budget
    "ui_slow_first_token": ("P1", "odds the Fed cuts", {"ui.slow_first_token", "ui.slow_done"}),
    "ui_slow_done": ("O1", "naked call on AAPL", {"ui.slow_done"}),
}
STALL_MS = 3000  # above both latency budgets of target.yaml (2000 / 2500 ms)


@pytest.fixture(scope="module")
def setup(harness_env, tmp_path_factory):
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {CHROMIUM} is missing")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    tmp = tmp_path_factory.mktemp("ui")
    data = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text())
    smoke = [c for c in data["cases"] if c.get("smoke")]
    for c in smoke:
        c["channels"] = ["cli", "ui"]
        c.get("labels", {}).pop("channel", None)
    cases_path = tmp / "cases.yaml"
    cases_path.write_text(yaml.safe_dump({"version": 1, "cases": smoke}, sort_keys=False))
    target = target_variant(tmp, **{"trace_backend.resolve_deadline_s": 6})
    config = load_target_config(target)
    cases = load_cases(cases_path, specialists=config.vocabulary.specialists, has_ui=True)
    return tmp, config, cases


def _run(config, cases, filters: Filters, faults: str | None = None, repeats: dict | None = None) -> dict:
    saved = {k: os.environ.get(k) for k in ("OBAI_DEMO_FAULTS", "OBAI_DEMO_UI_STALL_MS")}
    if faults:
        os.environ["OBAI_DEMO_FAULTS"] = faults
        os.environ["OBAI_DEMO_UI_STALL_MS"] = str(STALL_MS)
    try:
        code, out = headless.run(config, cases, filters, jobs=2, repeats=repeats,
                                 after_finish=after_run(config, cases, html=True))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    run_dir = Path(out["run_dir"])
    results = load_results(run_dir / "results.json")
    return {"code": code, "run_dir": run_dir, "units": {u["unit_id"]: u for u in results["units"]},
            "suite": json.loads((run_dir / "suite.json").read_text())}


@pytest.fixture(scope="module")
def both(setup):
    _, config, cases = setup
    # Once each: the cli turns are the slow part, and the faulted run covers repeats on the ui channel.
    return _run(config, cases, Filters(), repeats={c.id: 1 for c in cases.cases})


@pytest.fixture(scope="module")
def faulted(setup):
    _, config, cases = setup
    faults = ",".join(f"{f}@{scope}" for f, (_, scope, _codes) in UI_MATRIX.items())
    return _run(config, cases, Filters(channels=("ui",)), faults)


def _tripped(unit: dict) -> set[str]:
    return {c for o in unit["rule_outcomes"] if o["status"] in ("fail", "needs_review")
            for c in (o.get("codes") or [o["code"]])}


def _twin(unit_id: str) -> str:
    return unit_id.replace(".ui", "")


# ---------------------------------------------------------------------- the same verdicts


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
    assert both["code"] == headless.Exit.OK


def test_ui_answers_are_the_cli_answers(both):
    for uid, unit in both["units"].items():
        if unit["channel"] == "ui" and unit["case_id"] != "A1":  # a job id differs by session
            assert unit["answer"] == both["units"][_twin(uid)]["answer"], uid


def test_channel_is_a_partition_facet(both):
    parts = {p["partition"]: p for p in both["suite"]["partitions"]}
    ui = parts["channel=ui,provenance=synthetic"]
    assert ui["n"] == 8 and ui["loss"] == 0  # eight smoke cases; repeats average inside a unit
    for cat in UI_CATEGORIES:
        assert ui["by_category"][cat]["n"] == 8 and ui["by_category"][cat]["loss"] == 0
    for key, p in parts.items():
        if key.startswith("intent="):
            assert all(p["by_category"][c]["status"] == "unbewertbar" for c in UI_CATEGORIES), key


# ---------------------------------------------------------------------- the web chat's faults


@pytest.mark.parametrize("fault", sorted(UI_MATRIX))
def test_ui_fault_trips_its_rule(faulted, fault):
    case_id, _scope, codes = UI_MATRIX[fault]
    units = [u for u in faulted["units"].values() if u["case_id"] == case_id]
    assert units
    for unit in units:
        assert _tripped(unit) == codes, (fault, unit["unit_id"], _tripped(unit))
        hard = codes - {"ui.slow_first_token", "ui.slow_done"}
        assert unit["verdict"] == ("fail" if hard else "needs_review"), (fault, unit["verdict"])


def test_unfaulted_ui_units_stay_clean(faulted):
    targeted = {case_id for case_id, _s, _c in UI_MATRIX.values()}
    clean = [u for u in faulted["units"].values() if u["case_id"] not in targeted]
    assert {u["case_id"] for u in clean} == {"A1", "M1", "R1"}
    assert all(u["verdict"] == "pass" for u in clean)


def test_ui_faults_land_in_the_ui_categories(faulted):
    ui = next(p for p in faulted["suite"]["partitions"] if p["partition"] == "channel=ui,provenance=synthetic")
    cats = ui["by_category"]
    # Eight units (S1 and M1 run three repeats each; a unit counts once).
    assert cats["ui_rendering"]["loss"] == pytest.approx(1 / 8)      # F1
    assert cats["ui_display"]["loss"] == pytest.approx(2 / 8)        # S1, MD1
    assert cats["ui_latency"]["loss"] == pytest.approx((1 + 0.5) / 8)  # P1 both budgets, O1 one
    for cat in ("routing_skills", "specialist_output", "answer_grounding"):
        assert cats[cat]["loss"] == 0


# ---------------------------------------------------------------------- an outage mid-run


@pytest.fixture(scope="module")
def outage(setup, both, trace_store):
    tmp, config, cases = setup
    home = tmp / "chat-home"
    exe = shutil.which("obai-demo")
    env = {**os.environ, **local_store_env(trace_store.api_url), "OPIK_PROJECT_NAME": config.backend.project,
           "OBAI_DEMO_HOME": str(home), "OBAI_DEMO_ETA_SECONDS": "1"}
    env.pop("OBAI_DEMO_FAULTS", None)
    chat = subprocess.Popen([exe, "serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True, start_new_session=True)
    try:
        ready = json.loads(chat.stdout.readline())
        raw = yaml.safe_load(config.path.read_text())
        raw["ui"].pop("server")
        raw["ui"]["base_url"] = ready["url"]
        target = tmp / "target-own-chat.yaml"
        target.write_text(yaml.safe_dump(raw, sort_keys=False))
        own = load_target_config(target)
        runs = Path(os.environ["OBAI_E2E_RUNS"])
        earlier = set(runs.glob("*/*"))
        events: list[str] = []

        def watch() -> None:
            # jobs=1: MD1, MD1.ui, F1, F1.ui, R1, R1.ui. After MD1.ui the backend goes down; after
            # F1.ui the whole chat stops, long before R1.ui (R1 on the cli runs in between).
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                packets = {p.name for p in runs.glob("*/*/*.ui.json") if p.parent not in earlier}
                if "MD1.ui.json" in packets and "down" not in events:
                    Path(ready["outage_file"]).parent.mkdir(parents=True, exist_ok=True)
                    Path(ready["outage_file"]).write_text("")
                    events.append("down")
                if "F1.ui.json" in packets and "stopped" not in events:
                    os.killpg(chat.pid, signal.SIGTERM)
                    events.append("stopped")
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        code, out = headless.run(own, cases, Filters(ids=("MD1", "F1", "R1")), jobs=1,
                                 after_finish=after_run(own, cases, html=True))
        watcher.join(5)
    finally:
        if chat.poll() is None:
            os.killpg(chat.pid, signal.SIGKILL)
        chat.wait(10)
    run_dir = Path(out["run_dir"])
    results = load_results(run_dir / "results.json")
    return {"code": code, "events": events, "run_dir": run_dir,
            "units": {u["unit_id"]: u for u in results["units"]},
            "suite": json.loads((run_dir / "suite.json").read_text())}


def test_outage_units_are_named_as_such(outage):
    assert outage["events"] == ["down", "stopped"]
    units = outage["units"]
    assert units["MD1.ui"]["verdict"] == "pass"
    for uid, how in (("F1.ui", "health check"), ("R1.ui", "did not load")):
        unit = units[uid]
        assert (unit["verdict"], unit["reasons"]) == ("inconclusive", ["ui_outage"]), uid
        assert how in unit["judgment"] and "unbewertbar, never loss" in unit["judgment"], unit["judgment"]
    assert outage["code"] == headless.Exit.INCONCLUSIVE


def test_cli_units_are_unaffected(outage, both):
    for uid in ("MD1", "F1", "R1"):
        unit, reference = outage["units"][uid], both["units"][uid]
        assert (unit["verdict"], unit["reasons"]) == (reference["verdict"], reference["reasons"]), uid
        assert unit["answer"] == reference["answer"]


def test_ui_categories_are_unbewertbar_during_the_outage(outage):
    suite = outage["suite"]
    assert suite["counts"]["outage"] == 2 and suite["counts"]["aborted"] == 0
    assert suite["abort_rate"] == 0 and suite["suite_status"] == "scored"
    parts = {p["partition"]: p for p in suite["partitions"]}
    ui = parts["channel=ui,provenance=synthetic"]
    assert (ui["planned"], ui["completed"], ui["outage"], ui["aborted"]) == (3, 1, 2, 0)
    for cat in UI_CATEGORIES:
        assert ui["by_category"][cat]["n"] == 1 and ui["by_category"][cat]["loss"] == 0  # MD1.ui only, never 0 for the rest
    for key in ("intent=price_lookup,provenance=synthetic", "intent=fundamentals,provenance=synthetic",
                "intent=refusal,provenance=synthetic"):
        assert parts[key]["n"] == 1 and parts[key]["loss"] == 0 and parts[key]["abort_rate"] == 0
    assert any("upstream outage of the ui channel" in w and "F1.ui" in w and "R1.ui" in w for w in suite["warnings"])


def test_the_report_says_so(outage):
    html = (outage["run_dir"] / "report.html").read_text()
    assert "upstream outage of the ui channel" in html and "unbewertbar, never loss" in html
    from markdown_it import MarkdownIt

    tokens = MarkdownIt().enable("table").parse((outage["run_dir"] / "report.md").read_text())
    cells = [t.content for t in tokens if t.type == "inline"]
    at = cells.index("R1.ui")
    assert cells[at + 2] == "inconclusive" and cells[at + 3] == "ui_outage"
