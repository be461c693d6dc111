"""A copy of the bundle's files a run reads (cases, catalogs, schemas, references and SKILL.md) at another path."""
from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("cases", "catalogs", "schemas", "references")


def bundle_copy(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in FOLDERS:
        shutil.copytree(REPO / name, path / name)
    shutil.copy2(REPO / "SKILL.md", path / "SKILL.md")
    return path
