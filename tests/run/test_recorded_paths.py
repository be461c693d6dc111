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
