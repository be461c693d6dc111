"""Shared state for the judging tests: the bundle's configuration and cases, fresh run copies."""
from __future__ import annotations

import json

import pytest
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config

from .helpers import EXTRA_CATALOG, copy_run, make_round


@pytest.fixture(scope="session")
def config_cases():
    config = load_target_config(None)
    return config, load_cases_for(config)


@pytest.fixture
def run(tmp_path):
    """A copy of the real demo run kept in tests/judging/data/demo-run (MD1, S2, A1, O2, R1)."""
    return copy_run(tmp_path)


@pytest.fixture
def na_round(tmp_path, config_cases):
    """A round whose R1 packet holds two questions that do not apply (a rejection unit)."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(EXTRA_CATALOG))
    run = copy_run(tmp_path)
    return run, make_round(run, *config_cases, catalog_path=catalog, share="1")
