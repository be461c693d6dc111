"""Where the judge panel's configuration lives, and which environment variables it names.

The panel file (``catalogs/judges.yaml``, or the file ``$OBAI_E2E_JUDGES`` names) is read
in full by the judging stage. The driving stage needs only the names of the variables
that hold the judges' keys, to keep them out of the agent's environment: they are read
here without validating the rest, so a panel file that would be refused does not stop a
run that asks no judge.
"""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..base.paths import catalogs_dir

ENV_FILE = "OBAI_E2E_JUDGES"
FILE_NAME = "judges.yaml"


def default_path() -> Path:
    env = os.environ.get(ENV_FILE)
    return Path(env) if env else catalogs_dir() / FILE_NAME


def key_names(path: Path | None = None) -> frozenset[str]:
    """Every ``api_key_env`` the panel file names (none when it is missing or unreadable)."""
    path = Path(path) if path else default_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return frozenset()
    judges = data.get("judges") if isinstance(data, dict) else None
    return frozenset(j["api_key_env"] for j in judges or [] if isinstance(j, dict)
                     and isinstance(j.get("api_key_env"), str) and j["api_key_env"])
