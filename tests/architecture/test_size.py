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


FUNCTION_LIMIT = 80


def too_long_functions(root: Path, limit: int = FUNCTION_LIMIT) -> list[tuple[str, str, int]]:
    """(path relative to ``root``, qualified name, lines) of every function under ``root`` longer than ``limit``
    lines, its decorators not counted: a function that long does several things (STYLE.md)."""
    import ast

    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                name = f"{prefix}{getattr(child, 'name', '')}"
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = child.end_lineno - child.lineno + 1
                    if lines > limit:
                        found.append((path.relative_to(root).as_posix(), name, lines))
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    stack.append((child, f"{name}."))
    return sorted(found)


def test_no_function_is_longer_than_the_limit():
    long = too_long_functions(importgraph.PACKAGE)
    assert long == [], "; ".join(f"scripts/obai_e2e/{p}:{f} has {n} lines (limit {FUNCTION_LIMIT})"
                                 for p, f, n in long)


def test_the_function_size_check_can_fail(tmp_path):
    long = "".join(f"        x{i} = {i}\n" for i in range(FUNCTION_LIMIT))  # with its def: one line over
    short = "".join(f"    y{i} = {i}\n" for i in range(FUNCTION_LIMIT - 1))  # with its def: at the limit
    (tmp_path / "mod.py").write_text(f"class C:\n    def long(self):\n{long}\n\ndef short():\n{short}")
    assert too_long_functions(tmp_path) == [("mod.py", "C.long", FUNCTION_LIMIT + 1)]
