"""Settings a target brought from elsewhere needs: paths relative to its file, its own runs
folder, its version command's timeout, its own strategy wording, and the window warning.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from obai_e2e import cli
from obai_e2e.base import paths
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.judge.rubric.check import check_packet
from obai_e2e.run.preflight import window_repeats
from recorded import case, packet

REPO = Path(__file__).resolve().parents[2]
LEDGER = REPO / "examples" / "ledger-agent"


def ledger_copy(tmp_path: Path, edit=None) -> Path:
    data = yaml.safe_load((LEDGER / "target.yaml").read_text())
    if edit:
        edit(data)
    path = tmp_path / "conf" / "target.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_paths_in_a_target_file_start_at_its_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the harness runs from does not matter
    config = load_target_config(LEDGER / "target.yaml")
    assert config.plan == LEDGER / "plan.yaml"
    assert config.catalog == REPO / "catalogs" / "loss-catalog.v1.json"  # {bundle}/...
    assert config.target.workdir == LEDGER

    def own(d):
        d["target"]["workdir"] = "agent"
        d["run"].update(plan="../plans/p.yaml", holdout_cases="/abs/holdout.yaml")
    config = load_target_config(ledger_copy(tmp_path, own))
    assert config.target.workdir == tmp_path / "conf" / "agent"
    assert config.plan == tmp_path / "plans" / "p.yaml"
    assert config.holdout_cases == Path("/abs/holdout.yaml")


def test_the_runs_folder_can_be_set_in_the_target_file(tmp_path, monkeypatch):
    monkeypatch.delenv("OBAI_E2E_RUNS", raising=False)
    try:
        load_target_config(ledger_copy(tmp_path, lambda d: d["run"].update(runs_dir="e2e-runs")))
        assert paths.runs_root() == tmp_path / "conf" / "e2e-runs"
        # The trace store serves every target: a target's own runs folder does not move it.
        assert paths.store_dir() == paths.bundle_root() / "runs" / ".trace-store"
        monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "env-runs"))  # the environment still wins
        assert paths.runs_root() == tmp_path / "env-runs"
        monkeypatch.delenv("OBAI_E2E_RUNS")
        load_target_config(LEDGER / "target.yaml")  # a target without runs_dir: the bundle's
        assert paths.runs_root() == paths.bundle_root() / "runs"
    finally:
        paths.use_runs_root(None)


def test_the_version_commands_timeout_is_the_targets(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))

    def slow(d):
        d["target"]["version_command"] = [sys.executable, "-c", "import time; time.sleep(5)"]
        d["target"]["version_timeout_s"] = 0.2
        d["target"]["command"][0] = sys.executable  # on PATH, so preflight gets to the version check
        d["run"]["plan"] = str(LEDGER / "plan.yaml")
    path = ledger_copy(tmp_path, slow)
    code = cli.main(["preflight", "--target", str(path), "--cases", str(LEDGER / "cases.yaml"), "--no-start"])
    out = json.loads(capsys.readouterr().out)
    assert code == 4, out
    assert "did not finish in 0.2 s (target.version_timeout_s)" in out["reason"]


def test_the_strategy_contract_is_read_with_the_targets_labels(tmp_path):
    unit = packet("clean", "S1.r1")
    english = load_target_config(REPO / "cases" / "target.yaml")
    assert check_packet(unit, case("S1"), english).verdict == "pass"
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
    data["rubric"]["strategy_labels"] = {"verdict": r"\bUrteil\b", "total_trades": r"(?im)^Trades gesamt:\s*(\d+)"}
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    german = load_target_config(path)
    result = check_packet(unit, case("S1"), german)
    assert (result.verdict, result.reasons) == ("fail", ["specialist.strategy.contract_broken"])
    detail = next(o.detail for o in result.outcomes if o.rule == "specialist.strategy.contract_broken")
    assert detail == "strategy output lacks: Verdict, Total trades line"


def test_preflight_warns_when_window_mode_meets_repeats(tmp_path):
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
    data["correlation"] = {"match": "none"}
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    window = load_target_config(path)
    cases = load_cases_for(window, REPO / "cases" / "cases.yaml")
    warning = window_repeats(window, cases, None)
    assert warning and "S1 ×3" in warning and "run one after another" in warning
    assert window_repeats(load_target_config(REPO / "cases" / "target.yaml"), cases, None) is None


def test_async_rules_follow_the_targets_wording_and_need_no_strategy_specialist(tmp_path):
    unit = packet("clean", "A1")

    def target(edit) -> object:
        data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
        edit(data)
        path = tmp_path / "target.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return load_target_config(path)

    plain = target(lambda d: d["vocabulary"].pop("strategy_specialist"))
    a1 = load_cases_for(plain, REPO / "cases" / "cases.yaml").by_id("A1")
    outcomes = {o.rule: o for o in check_packet(unit, a1, plain).outcomes}
    assert outcomes["specialist.strategy.async_stub_broken"].status == "pass"
    assert outcomes["specialist.strategy.async_followup_missing"].status == "pass"
    assert outcomes["specialist.strategy.contract_broken"].detail == "the job is not a strategy specialist's"
    german = target(lambda d: d["async_jobs"].update(job_id_pattern=r"Auftrag:\s*(\d+)"))
    result = check_packet(unit, case("A1"), german)
    assert (result.verdict, result.reasons) == ("fail", ["specialist.strategy.async_stub_broken"])
