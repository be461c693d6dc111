"""Fixtures shared by the test suites."""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from obai_e2e.base.opik_env import QUIET_SDK_ENV
from obai_e2e.tracestore import StoreInfo, ensure_running, stop

# The SDK is imported by tests in this process too; it must not report anywhere.
for _name, _value in QUIET_SDK_ENV.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def trace_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreInfo]:
    """A local trace store in a temporary directory, running for the whole session."""
    store_dir = tmp_path_factory.mktemp("trace-store")
    info = ensure_running(store_dir)
    try:
        yield info
    finally:
        stop(store_dir)


@pytest.fixture(scope="session")
def sdk_env(trace_store: StoreInfo) -> dict[str, str]:
    """``os.environ`` plus the variables that point an ``opik`` SDK process at ``trace_store``."""
    return {**os.environ, **trace_store.sdk_env()}
