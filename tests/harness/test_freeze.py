"""Freeze audit, write-once artifacts and run seals, on a copy of the bundle."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from obai_e2e.base.errors import FrozenArtifactChanged, HoldoutSealed, WriteOnceViolation
from obai_e2e.base.fsutil import write_once, write_once_json
from obai_e2e.config.target import load_target_config
from obai_e2e.protocol import freeze
from obai_e2e.protocol.holdout import require_open
from obai_e2e.protocol.seal import attest, seal, verify_seal
from bundle_copy import bundle_copy


@pytest.fixture
def home(tmp_path, monkeypatch):
    root = bundle_copy(tmp_path / "bundle")
    (root / "catalogs" / "freeze.json").unlink(missing_ok=True)
    monkeypatch.setenv("OBAI_E2E_HOME", str(root))
    monkeypatch.setenv("OBAI_E2E_TARGET", str(root / "cases" / "target.yaml"))
    return root


def frozen(home: Path):
    config = load_target_config(home / "cases" / "target.yaml")
    baseline = home / "baseline-results.json"
    baseline.write_text('{"schema_version": 1}\n')
    freeze.freeze(config, freeze_id="F1", baselines=[baseline], root=home)
    return config


@pytest.mark.parametrize("rel,kind", [
    ("cases/cases.yaml", "cases"), ("cases/holdout.yaml", "holdout cases"), ("cases/plan.yaml", "plan"),
    ("catalogs/loss-catalog.v1.json", "catalog"), ("catalogs/gates.yaml", "gates"), ("SKILL.md", "skill"),
    ("references/judge-prompt.md", "judge prompt"), ("references/rubric.md", "reference"),
    ("schemas/verdict.v1.schema.json", "schema"), ("baseline-results.json", "baseline"),
])
def test_drift_in_each_artifact_type_is_named(home, rel, kind):
    config = frozen(home)
    assert freeze.verify(config, root=home).clean
    path = home / rel
    path.write_bytes(path.read_bytes() + b"\n# changed\n")
    drift = freeze.verify(config, root=home)
    assert drift.changed == [rel], kind
    assert rel in drift.describe()


def test_rubric_part_of_target_config_is_frozen_but_timeouts_are_not(home):
    frozen(home)
    target = home / "cases" / "target.yaml"
    target.write_text(target.read_text().replace("timeout_s: 180", "timeout_s: 120"))
    assert freeze.verify(load_target_config(target), root=home).clean
    target.write_text(target.read_text().replace("hub_span: hub", "hub_span: router"))
    assert freeze.verify(load_target_config(target), root=home).changed == [freeze.TARGET_VIRTUAL]


def test_missing_and_added_files_are_named(home):
    config = frozen(home)
    (home / "references" / "rubric.md").unlink()
    (home / "schemas" / "extra.schema.json").write_text("{}")
    drift = freeze.verify(config, root=home)
    assert drift.missing == ["references/rubric.md"] and drift.added == ["schemas/extra.schema.json"]


def test_preflight_refuses_a_drifted_freeze(home, monkeypatch, tmp_path):
    from obai_e2e.run import preflight

    frozen(home)
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    (home / "cases" / "cases.yaml").write_text((home / "cases" / "cases.yaml").read_text() + "\n")
    report = preflight.run(home / "cases" / "target.yaml", start_store=False)
    assert not report.ready and "cases/cases.yaml" in report.reason and "re-freeze on purpose" in report.reason


def test_write_once_refuses_and_keeps_the_original(tmp_path):
    path = tmp_path / "X.verdict.json"
    assert write_once_json(path, {"verdict": "fail"})
    assert not write_once_json(path, {"verdict": "fail"})  # identical bytes: no-op
    with pytest.raises(WriteOnceViolation):
        write_once(path, '{"verdict": "pass"}\n')
    assert json.loads(path.read_text()) == {"verdict": "fail"}


def test_a_sealed_run_detects_a_manual_edit(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "MD1.verdict.json").write_text('{"verdict": "fail"}\n')
    (run / "report.md").write_text("| ID |\n")
    seal(run)
    assert verify_seal(run).clean
    (run / "gate-development.json").write_text(json.dumps(attest(run, {"passed": True})))  # after the seal, attested
    (run / "replay-report.json").write_text("{}")  # arrives after the seal and decides nothing
    assert verify_seal(run).clean
    (run / "MD1.verdict.json").write_text('{"verdict": "pass"}\n')
    (run / "planted.json").write_text("{}")
    drift = verify_seal(run)
    assert drift.changed == ["MD1.verdict.json"] and drift.added == ["planted.json"]


def test_a_file_swapped_for_a_link_to_the_same_bytes_is_a_change(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "MD1.verdict.json").write_text('{"verdict": "fail"}\n')
    seal(run)
    copy = tmp_path / "elsewhere.json"
    copy.write_bytes((run / "MD1.verdict.json").read_bytes())
    (run / "MD1.verdict.json").unlink()
    (run / "MD1.verdict.json").symlink_to(copy)
    assert verify_seal(run).changed == ["MD1.verdict.json"]
    (run / "seal.json").write_text("{not json")
    with pytest.raises(FrozenArtifactChanged, match="seal.json is not a readable seal"):
        verify_seal(run)


def test_the_holdout_file_is_refused_without_an_open(home):
    with pytest.raises(HoldoutSealed):
        require_open(None, home / "cases" / "holdout.yaml", root=home)


def test_preflight_always_names_its_freeze_check(home, monkeypatch, tmp_path):
    """SKILL.md's blocker names the `freeze` check: preflight prints it whether or not anything is frozen."""
    from obai_e2e.run import preflight

    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    checks = {c["name"]: c for c in preflight.run(home / "cases" / "target.yaml", start_store=False).checks}
    assert checks["freeze"]["ok"] and checks["freeze"]["detail"].startswith("nothing is frozen")
    frozen(home)
    checks = {c["name"]: c for c in preflight.run(home / "cases" / "target.yaml", start_store=False).checks}
    assert checks["freeze"]["ok"] and checks["freeze"]["detail"] == "freeze F1 verified (%d files)" % len(
        json.loads((home / "catalogs" / "freeze.json").read_text())["files"])
    blockers = (home / "SKILL.md").read_text().split("## Blockers")[1].split("\n## ")[0]
    assert "The failed check is `freeze`" in blockers and "freeze" in checks


def test_preflight_promises_attack_questions_only_when_a_judge_must_decide_them(home):
    """The demo decides every attack by a rule, so adversarial_judged is asked of no unit; without refusal
    patterns the guardrail-bypass cases are left to the panel and the promise is made."""
    import dataclasses

    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.loss.catalog import load_catalog
    from obai_e2e.run.panel_info import panel_info, undecidable_attacks

    config = load_target_config(home / "cases" / "target.yaml")
    cases = [c for c in load_cases_for(config).cases if not c.disabled]
    catalog = load_catalog(home / "catalogs" / "loss-catalog.v4.json")
    info = panel_info(catalog, config, cases)
    assert info["runs"] and info["model_judged"] == ["answer_completeness", "answer_faithfulness"]
    assert info["not_asked"] == ["adversarial_judged"]
    assert "adversarial_judged is asked of no unit" in info["line"] and "no model-judged answers to cover" in info["line"]
    bare = dataclasses.replace(config, refusal_patterns=())
    bypass = [c.id for c in cases if c.attack == "guardrail_bypass"]
    assert bypass and undecidable_attacks(bare, cases) == bypass
    info = panel_info(catalog, bare, cases)
    assert info["model_judged"] == ["answer_completeness", "answer_faithfulness", "adversarial_judged"]
    assert info["not_asked"] == []


def test_a_catalog_whose_only_model_judged_category_is_never_asked_runs_no_panel(home):
    import dataclasses

    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.loss.catalog import load_catalog
    from obai_e2e.run.panel_info import panel_info

    config = load_target_config(home / "cases" / "target.yaml")
    cases = [c for c in load_cases_for(config).cases if not c.disabled]
    catalog = load_catalog(home / "catalogs" / "loss-catalog.v4.json")
    attacks_only = dataclasses.replace(catalog, categories=[c for c in catalog.categories
                                                            if c.id not in ("answer_completeness", "answer_faithfulness")])
    info = panel_info(attacks_only, config, cases)
    assert not info["runs"] and info["not_asked"] == ["adversarial_judged"]
    assert info["line"].startswith("no panel: catalog v4's model-judged categories are asked of no unit; "
                                   "adversarial_judged is asked of no unit")
