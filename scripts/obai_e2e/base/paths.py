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


def _repository_root(root: Path) -> Path | None:
    """The git checkout that holds the bundle (an installed skill lives inside one), or None."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return None


def portable(path: Path | str) -> str:
    """``path`` as run.json records it: relative to the bundle root when it is in the bundle's
    checkout (``../`` where needed), so that another checkout of the same commit at another
    path finds it; absolute otherwise."""
    target = Path(path).resolve()
    root = bundle_root()
    if target.is_relative_to(root):
        return target.relative_to(root).as_posix()
    repository = _repository_root(root)
    if repository is not None and target.is_relative_to(repository):
        return Path(os.path.relpath(target, root)).as_posix()
    return str(target)


def recorded(text: str | None) -> Path | None:
    """A path run.json recorded (see :func:`portable`), resolved against this checkout's bundle."""
    if not text:
        return None
    path = Path(text)
    return path if path.is_absolute() else bundle_root() / path


_configured_runs: Path | None = None


def use_runs_root(path: Path | None) -> None:
    """The runs folder a target configuration names (run.runs_dir); $OBAI_E2E_RUNS still wins."""
    global _configured_runs
    _configured_runs = Path(path).resolve() if path is not None else None


def runs_root() -> Path:
    env = os.environ.get("OBAI_E2E_RUNS")
    if env:
        return Path(env).resolve()
    return _configured_runs or bundle_root() / "runs"


def store_dir() -> Path:
    """State of the local trace store: database, pid/port file and log.

    One store serves every target, so a target's own runs folder does not move it.
    """
    env = os.environ.get("OBAI_TRACE_STORE_DIR")
    if env:
        return Path(env).resolve()
    runs = os.environ.get("OBAI_E2E_RUNS")
    return (Path(runs).resolve() if runs else bundle_root() / "runs") / ".trace-store"


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
