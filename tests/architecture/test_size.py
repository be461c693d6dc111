"""Module size: no module of the package is longer than LIMIT lines."""
from __future__ import annotations

from pathlib import Path

from . import importgraph

LIMIT = 400


def too_long(root: Path, limit: int = LIMIT) -> list[tuple[str, int]]:
    """(path relative to ``root``, lines) of every .py file under ``root`` longer than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        with path.open("rb") as fh:
            lines = sum(1 for _ in fh)
        if lines > limit:
            found.append((path.relative_to(root).as_posix(), lines))
    return found


def test_no_module_is_longer_than_the_limit():
    long = too_long(importgraph.PACKAGE)
    assert long == [], "; ".join(f"scripts/obai_e2e/{p} has {n} lines (limit {LIMIT})" for p, n in long)


def test_the_size_check_can_fail(tmp_path):
    (tmp_path / "stage").mkdir()
    (tmp_path / "stage" / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "short.py").write_text("x = 1\n" * LIMIT)
    assert too_long(tmp_path) == [("stage/long.py", LIMIT + 1)]
