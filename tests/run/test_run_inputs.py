"""A run's own copy of its inputs: made once when the run is created, read by every later stage, checked by hash.

The cases and the target configuration live in a team's repository, where the agent under test can write
during its turn. A new run copies them (and the loss plan, the loss catalog, the gate definitions and the
judge panel file) into ``inputs/`` with their SHA-256 in run.json; commands on the run read the copies; a
live file that changed is named, never used; a copy that changed is refused. A run made before keeps reading
the files run.json names.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
import yaml
from obai_e2e.base.errors import FrozenArtifactChanged, UsageError
from obai_e2e.base.fsutil import sha256_file
from obai_e2e.base.paths import recorded
from obai_e2e.commands._common import load
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.rundir import inputs
from obai_e2e.rundir.meta import RUN_FILE, RunMeta, load_run
from obai_e2e.run.plan import create_run

REPO = Path(__file__).resolve().parents[2]
ROLES = ["cases", "target", "plan", "catalog", "gates", "judges", "calibration"]


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A team's repository with its target.yaml (a workdir and a loss catalog beside it) and cases.yaml."""
    repo = tmp_path / "team-repo"
    (repo / "agent").mkdir(parents=True)
    shutil.copy(REPO / "catalogs" / "loss-catalog.v3.json", repo / "loss-catalog.json")
    shutil.copy(REPO / "cases" / "cases.yaml", repo / "cases.yaml")
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text(encoding="utf-8"))
    data["target"]["workdir"] = "agent"
    data["run"]["catalog"] = "loss-catalog.json"
    data["run"].pop("runs_dir", None)
    (repo / "target.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    return repo


def new_run(repo: Path) -> tuple[Path, RunMeta]:
    config = load_target_config(repo / "target.yaml")
    return create_run(config, load_cases_for(config, repo / "cases.yaml"), Filters(ids=("MD1",)),
                      root=repo.parent / "runs")


def on_run(run_dir: Path, **given) -> argparse.Namespace:
    return argparse.Namespace(run_dir=run_dir, target=given.get("target"), cases=given.get("cases"))


def test_a_new_run_keeps_a_copy_of_each_input_with_its_hash(team):
    run_dir, meta = new_run(team)
    assert list(meta.inputs) == ROLES
    in_run_json = json.loads((run_dir / RUN_FILE).read_text())["inputs"]
    for role, rec in meta.inputs.items():
        copy = run_dir / rec.file
        assert rec.file.startswith("inputs/") and sha256_file(copy) == rec.sha256 == in_run_json[role]["sha256"]
        assert sha256_file(recorded(rec.source)) == rec.sha256  # copied from the file named
    assert (run_dir / "inputs" / "cases.yaml").read_bytes() == (team / "cases.yaml").read_bytes()
    assert meta.inputs["cases"].sha256 == meta.cases_sha256
    assert inputs.summary(meta.inputs) == {"frozen": True, "changed": [], "note": None}
    assert inputs.lines(inputs.summary(meta.inputs)) == []


def test_every_later_command_reads_the_copies_and_names_the_live_files_that_changed(team):
    run_dir, meta = new_run(team)
    live = team / "cases.yaml"
    live.write_text(live.read_text().replace("expected_tools: [market_data_analysis]",
                                             "expected_tools: [fundamentals_analysis]"))
    (team / "loss-catalog.json").unlink()
    config, cases = load(on_run(run_dir))
    assert cases.by_id("MD1").expected_tools == ("market_data_analysis",)
    assert cases.path == run_dir / "inputs" / "cases.yaml"
    assert config.catalog == run_dir / "inputs" / "catalog.json" and config.path == run_dir / "inputs" / "target.yaml"
    changed = inputs.live_changes(load_run(run_dir).inputs)
    assert [(c.role, c.live_sha256 is None) for c in changed] == [("cases", False), ("catalog", True)]
    text = inputs.lines(inputs.summary(load_run(run_dir).inputs))[0]
    assert "never these" in text and f"cases file {meta.inputs['cases'].source} changed" in text
    assert f"loss catalog {meta.inputs['catalog'].source} is gone" in text
    # A file named on the command line is used as given.
    _, given = load(on_run(run_dir, cases=live))
    assert given.by_id("MD1").expected_tools == ("fundamentals_analysis",)


def test_the_copy_of_the_target_configuration_reads_its_paths_against_the_original_folder(team):
    run_dir, meta = new_run(team)
    config = inputs.frozen_config(run_dir, meta.inputs)
    assert config.path == run_dir / "inputs" / "target.yaml"
    assert config.target.workdir == (team / "agent").resolve()
    assert config.catalog == run_dir / "inputs" / "catalog.json"
    assert config.plan == run_dir / "inputs" / "plan.yaml"


def test_a_copy_changed_after_the_run_was_created_is_refused_naming_it(team):
    run_dir, meta = new_run(team)
    copy = run_dir / "inputs" / "cases.yaml"
    copy.write_text(copy.read_text().replace("market_data_analysis", "fundamentals_analysis"))
    with pytest.raises(FrozenArtifactChanged, match=f"{copy}: the run's copy of its cases file was changed"):
        load(on_run(run_dir))
    copy.unlink()
    with pytest.raises(FrozenArtifactChanged, match="the run's copy of its cases file is missing"):
        meta.input_path(run_dir, "cases")
    outside = {"cases": inputs.FrozenInput(file="../elsewhere.yaml", source="x", sha256="0" * 64)}
    with pytest.raises(FrozenArtifactChanged, match=r"/inputs/cases/file: '\.\./elsewhere\.yaml' is not a file under"):
        inputs.frozen_path(run_dir, outside, "cases")


def test_a_cases_file_that_changes_between_its_reading_and_its_copy_makes_no_run(team):
    config = load_target_config(team / "target.yaml")
    cases = load_cases_for(config, team / "cases.yaml")
    (team / "cases.yaml").write_text((team / "cases.yaml").read_text() + "\n# changed\n")
    with pytest.raises(UsageError, match="changed while the run was being created"):
        create_run(config, cases, Filters(ids=("MD1",)), root=team.parent / "runs")
    assert not [p for p in (team.parent / "runs").glob("*/*") if p.is_dir()]


def test_a_run_made_before_runs_kept_copies_reads_its_files_as_before_with_a_note(team):
    run_dir, _ = new_run(team)
    data = json.loads((run_dir / RUN_FILE).read_text())
    del data["inputs"]
    data["target_config"], data["cases_file"] = str(team / "target.yaml"), str(team / "cases.yaml")
    (run_dir / RUN_FILE).write_text(json.dumps(data))
    shutil.rmtree(run_dir / "inputs")
    meta = load_run(run_dir)
    assert meta.inputs == {} and "inputs" not in meta.to_json()  # read and written back as it was
    config, cases = load(on_run(run_dir))
    assert config.path == team / "target.yaml" and cases.path == team / "cases.yaml"
    note = inputs.summary(meta.inputs)
    assert note["frozen"] is False and "made before runs kept a copy" in inputs.lines(note)[0]


def test_a_resumed_run_is_judged_by_the_panel_file_it_was_made_with(team):
    from obai_e2e.judge.models.config import load as load_judges
    from obai_e2e.run.headless import frozen_panel

    judges = team / "judges.yaml"
    shutil.copy(REPO / "catalogs" / "judges.yaml", judges)
    config = load_target_config(team / "target.yaml")
    run_dir, meta = create_run(config, load_cases_for(config, team / "cases.yaml"), Filters(ids=("MD1",)),
                               root=team.parent / "runs", judges=(judges, sha256_file(judges)))
    assert meta.inputs["judges"].sha256 == sha256_file(judges)
    same = load_judges(judges)
    assert frozen_panel(same, run_dir, meta.inputs) is same
    # The panel file in the repository now sends the first judge's questions to another endpoint.
    judges.write_text(judges.read_text().replace("model: claude-sonnet-4-5", "model: a-model-of-the-agents-choosing"))
    resumed = frozen_panel(load_judges(judges), run_dir, meta.inputs)
    assert resumed.judges[0].model == "claude-sonnet-4-5" and resumed.sha256 == meta.inputs["judges"].sha256
    other = team / "another-panel.yaml"  # a panel file named for this command: used as given
    shutil.copy(judges, other)
    given = load_judges(other)
    assert frozen_panel(given, run_dir, meta.inputs) is given


def test_a_copy_never_holds_a_secret_and_a_turn_is_never_driven_from_one_without_it(team):
    token = "ledger-token-0123456789abcdef"
    live = team / "cases.yaml"
    data = yaml.safe_load(live.read_text())
    next(c for c in data["cases"] if c["id"] == "MD1")["env"] = {"LEDGER_API_TOKEN": token, "LEDGER_TIER": "pro"}
    live.write_text(yaml.safe_dump(data, sort_keys=False))
    run_dir, meta = new_run(team)
    rec = meta.inputs["cases"]
    copy = run_dir / rec.file
    assert token not in copy.read_text() and "LEDGER_API_TOKEN: REDACTED" in copy.read_text()
    assert rec.source_sha256 == sha256_file(live) != rec.sha256 == sha256_file(copy)
    assert not any(token in p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    # While the file it came from is unchanged, its bytes are the copy with the secret in: a stage reads it.
    _, cases = load(on_run(run_dir))
    assert cases.path == live and cases.by_id("MD1").env["LEDGER_API_TOKEN"] == token
    assert inputs.withheld(run_dir, meta.inputs) == [] and inputs.live_changes(meta.inputs) == []
    inputs.require_secrets(run_dir, meta.inputs)
    # Once it changed, the copy is read, its secret withheld: judged from, never driven from.
    data["cases"][0]["expected_tools"] = ["fundamentals_analysis"]
    live.write_text(yaml.safe_dump(data, sort_keys=False))
    _, cases = load(on_run(run_dir))
    assert cases.path == copy and cases.by_id("MD1").expected_tools == ("market_data_analysis",)
    assert cases.by_id("MD1").env == {"LEDGER_API_TOKEN": "REDACTED", "LEDGER_TIER": "pro"}
    assert inputs.withheld(run_dir, meta.inputs) == [str(copy)]
    with pytest.raises(UsageError, match=r"holds no secret values \(REDACTED\) .* restore .*cases\.yaml \(SHA-256 "):
        inputs.require_secrets(run_dir, meta.inputs)
