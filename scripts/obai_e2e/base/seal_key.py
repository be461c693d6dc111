"""The secret that signs a run's seal: named here, read only by the sealing and checking code.

``OBAI_E2E_SEAL_KEY`` is shared by the jobs that seal runs and the job that merges them (a CI
secret). It belongs to the harness alone: the agent under test and command judges never get
it (drive/agent_env.py, judge/models/client.py), and it is never written to a run.
"""
from __future__ import annotations

import os

KEY_ENV = "OBAI_E2E_SEAL_KEY"


def seal_key() -> bytes | None:
    """The signing key, or None when the variable is unset or empty."""
    raw = os.environ.get(KEY_ENV, "").strip()
    return raw.encode("utf-8") if raw else None
