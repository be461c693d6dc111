"""Where the bundle, its configuration and its run directories live.

The bundle root is the folder that holds ``SKILL.md``, ``scripts/``, ``cases/`` and
``catalogs/``: this repository, or ``.claude/skills/obai-e2e-regression/`` in a
repository the skill was installed into. ``OBAI_E2E_HOME`` overrides it (tests use this
to work on a copy).
"""
from __future__ import annotations

import os
from pathlib import Path


def bundle_root() -> Path:
    env = os.environ.get("OBAI_E2E_HOME")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[3]


def runs_root() -> Path:
    env = os.environ.get("OBAI_E2E_RUNS")
    if env:
        return Path(env).resolve()
    return bundle_root() / "runs"


def store_dir() -> Path:
    """State of the local trace store: database, pid/port file and log."""
    env = os.environ.get("OBAI_TRACE_STORE_DIR")
    if env:
        return Path(env).resolve()
    return runs_root() / ".trace-store"


def cases_dir() -> Path:
    return bundle_root() / "cases"


def cases_file(name: str, env_name: str) -> Path:
    """A file of ``cases/`` (cases.yaml, target.yaml, plan.yaml), or the path ``env_name`` holds."""
    env = os.environ.get(env_name)
    return Path(env) if env else cases_dir() / name


def schemas_dir() -> Path:
    return bundle_root() / "schemas"


def catalogs_dir() -> Path:
    return bundle_root() / "catalogs"
