"""The package's shape: stages import only earlier stages, and no module imports itself in a circle."""
from __future__ import annotations

from . import importgraph


def test_every_module_belongs_to_a_known_stage():
    unknown = sorted(m for m in importgraph.modules() if importgraph.stage(m) not in importgraph.STAGES)
    assert unknown == []


def test_no_stage_imports_a_later_stage():
    assert importgraph.upward(importgraph.graph()) == []


def test_no_import_cycles():
    assert importgraph.cycles(importgraph.graph()) == []


def test_the_checks_can_fail():
    g = {"obai_e2e.base.a": {"obai_e2e.report.b"}, "obai_e2e.report.b": {"obai_e2e.base.a"}}
    assert importgraph.upward(g) == [("obai_e2e.base.a", "obai_e2e.report.b")]
    assert importgraph.cycles(g) == [["obai_e2e.base.a", "obai_e2e.report.b"]]
