"""Fixtures of the store's tests."""
from __future__ import annotations

import pytest

from .helpers import Api


@pytest.fixture(scope="module")
def api(trace_store):
    """A raw HTTP client of the session's store, with its token."""
    client = Api(trace_store.api_url, trace_store.token)
    yield client
    client.close()
