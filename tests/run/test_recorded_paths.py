"""run.json's paths: relative to the bundle inside its checkout, so another checkout of the same commit finds them."""
from __future__ import annotations

from pathlib import Path

from obai_e2e.base.paths import portable, recorded


def test_inside_the_bundle_beside_it_in_the_repository_and_outside(tmp_path, monkeypatch):
    repository = tmp_path / "repo"
    bundle = repository / ".claude" / "skills" / "obai-e2e-regression"
    (bundle / "cases").mkdir(parents=True)
    (repository / ".git").mkdir()
    (repository / "e2e").mkdir()
    monkeypatch.setenv("OBAI_E2E_HOME", str(bundle))
    assert portable(bundle / "cases" / "cases.yaml") == "cases/cases.yaml"
    assert portable(repository / "e2e" / "target.yaml") == "../../../e2e/target.yaml"
    outside = tmp_path / "elsewhere" / "target.yaml"
    assert portable(outside) == str(outside)

    moved = tmp_path / "checkout-2" / ".claude" / "skills" / "obai-e2e-regression"
    monkeypatch.setenv("OBAI_E2E_HOME", str(moved))
    assert recorded("cases/cases.yaml") == moved / "cases" / "cases.yaml"
    assert recorded("../../../e2e/target.yaml").resolve() == tmp_path / "checkout-2" / "e2e" / "target.yaml"
    assert recorded(str(outside)) == outside
    assert recorded("") is None and recorded(None) is None
    assert isinstance(recorded("x"), Path)


def test_a_merge_job_finds_the_shards_absolute_paths_in_its_own_checkout_by_hash(tmp_path, monkeypatch):
    """A shard whose configuration was outside the bundle's checkout recorded its absolute path on its runner;
    the merge job, checked out elsewhere, takes the file under a trailing part of that path with the same bytes."""
    import pytest
    from obai_e2e.base.errors import UsageError
    from obai_e2e.base.fsutil import sha256_file
    from obai_e2e.rundir.meta import RunMeta

    job = tmp_path / "merge-job"
    (job / "e2e").mkdir(parents=True)
    target = job / "e2e" / "target.yaml"
    target.write_text("target: {name: x}\n")
    (job / "cases.yaml").write_text("cases: []\n")
    monkeypatch.setenv("OBAI_E2E_HOME", str(job / "bundle"))
    monkeypatch.chdir(job)
    meta = RunMeta(run_id="r", created_at="t", target_config="/home/runner/work/repo/e2e/target.yaml",
                   target_config_sha256=sha256_file(target), cases_file="/home/runner/work/repo/cases.yaml",
                   cases_sha256="0" * 64)
    assert meta.located("target_config", "--target") == target
    with pytest.raises(UsageError, match=r"cases file the run was created with, /home/runner/work/repo/cases\.yaml, "
                                         r"is not in this checkout .*; pass --cases PATH"):
        meta.located("cases", "--cases")  # same name, other bytes: never taken for it
