"""How the harness, the demo and the example agents import the opik SDK: its REST models are built on first use.

Each check runs in a fresh interpreter, since the SDK is imported once per process.
The SDK reading and writing real traces with these models is what every end-to-end
test does; here the import itself is looked at.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHECK = """
import json, pydantic
from pydantic._internal._config import config_defaults

opik = {importer}
from opik.rest_api.types import TracePublic

before_use = TracePublic.__pydantic_complete__
trace = TracePublic.model_validate({{"id": "t-1", "name": "hub", "tags": ["a"], "start_time": "2026-12-01T10:00:00Z"}})

class AfterImport(pydantic.BaseModel):
    x: int

print(json.dumps({{
    "deferred_at_import": not before_use,
    "complete_after_use": TracePublic.__pydantic_complete__,
    "validated": [trace.id, trace.name, trace.tags],
    "rejects": _rejects(TracePublic),
    "default_restored": config_defaults["defer_build"] is False,
    "later_models_build_at_once": AfterImport.__pydantic_complete__,
}}))
"""

REJECTS = """
def _rejects(model):
    try:
        model.model_validate({"start_time": "2026-12-01T10:00:00Z", "tags": "not a list"})
    except Exception as exc:
        return type(exc).__name__
    return None
"""

IMPORTERS = {
    "harness": "__import__('obai_e2e.base.opik_env', fromlist=['x']).import_sdk()",
    "demo": "__import__('obai_demo.tracing', fromlist=['x'])._opik()",
    "ledger-agent": "__import__('ledger_agent.recorder', fromlist=['x'])._load_sdk()",
    "desk-graph": "(__import__('desk_graph.cli', fromlist=['x'])._heavy_imports(True), __import__('opik'))[1]",
}


@pytest.mark.parametrize("who", sorted(IMPORTERS))
def test_sdk_models_are_built_on_first_use_and_validate_as_usual(who):
    code = textwrap.dedent(REJECTS) + CHECK.format(importer=IMPORTERS[who])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={"PATH": "/usr/bin:/bin", "HOME": str(REPO / ".no-home"),
                                         "OPIK_ANALYTICS_ENABLE": "false", "OPIK_SENTRY_ENABLE": "false"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {
        "deferred_at_import": True,
        "complete_after_use": True,
        "validated": ["t-1", "hub", ["a"]],
        "rejects": "ValidationError",
        "default_restored": True,
        "later_models_build_at_once": True,
    }


def test_this_test_process_loads_installed_packages_from_their_bytecode():
    """pytest marks every module of a package that declares a pytest plugin (opik does) for assert
    rewriting; tests/conftest.py lifts those marks, so the SDK is not parsed and compiled again here."""
    from _pytest.assertion.rewrite import AssertionRewritingHook
    from opik.rest_api import types

    assert not isinstance(types.__spec__.loader, AssertionRewritingHook), types.__spec__.loader
    assert isinstance(__spec__.loader, AssertionRewritingHook)  # this module's own asserts still are
