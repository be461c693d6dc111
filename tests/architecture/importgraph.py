"""The package's import graph: every ``obai_e2e`` import, at module level or inside a function.

``python tests/architecture/importgraph.py`` prints the stage graph as a Mermaid diagram
(the picture in references/architecture.md); the tests in this folder check its rules.
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scripts" / "obai_e2e"

# The pipeline, in order. A module may import its own stage and the stages before it.
STAGES = ["base", "config", "tracestore", "trace", "rundir", "drive", "judge", "report", "loss",
          "protocol", "run", "adopt", "bundle", "commands", "cli"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage(module: str) -> str:
    """The stage folder of a module; top-level modules (cli, __main__, __init__) count as ``cli``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in STAGES) else "cli"


def imports(module: str, path: Path, known: set[str]) -> set[str]:
    """Modules of the package that ``module`` imports, anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("obai_e2e"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("obai_e2e.") and a.name in known)
    out.discard(module)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: imports(m, p, known) for m, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, ())):
            # importing a package runs its __init__; an edge to a parent package is not a cycle
            if v.startswith(w + "."):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a stage to a later stage."""
    rank = {s: i for i, s in enumerate(STAGES)}
    return sorted((a, b) for a, targets in g.items() for b in targets
                  if rank[stage(b)] > rank[stage(a)])


def stage_edges(g: dict[str, set[str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for a, targets in g.items():
        for b in targets:
            if stage(a) != stage(b):
                edges[stage(a)].add(stage(b))
    return edges


def mermaid(g: dict[str, set[str]]) -> str:
    edges = stage_edges(g)
    lines = ["flowchart TD"]
    for s in STAGES:
        for t in STAGES:
            if t in edges.get(s, ()):
                lines.append(f"    {s} --> {t}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(mermaid(graph()))
