"""Every loss-layer test writes LOSS-HISTORY.md and run directories under its own tmp folder."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def runs_root(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("OBAI_E2E_RUNS", str(root))
    return root
