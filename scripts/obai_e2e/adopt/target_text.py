"""The draft target.yaml as text: every value with the span it came from in a comment above it."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .choices import Findings
from .yamltext import scalar, shown

DEFAULT_CATALOG = "{bundle}/catalogs/loss-catalog.v1.json"
SCRIPT = re.compile(r"\.(?:py|js|mjs|cjs|ts|mts|sh|bash|rb|pl|php|jar|exe)$", re.I)


@dataclass(frozen=True)
class Settings:
    """What adopt was told rather than what it read: how to start the agent, where its traces are."""

    name: str
    kind: str
    project: str
    command: list[str] | None
    refusal_exit_code: int | None
    version_command: list[str] | None = None
    workdir: str | None = None           # where the command runs, relative to the draft's folder
    relative: tuple[str, ...] = ()       # the command's relative paths that need it


def relative_paths(argv: list[str] | None, cwd: Path) -> list[str]:
    """The arguments of ``argv`` that name a path relative to the folder the command is run in."""
    out = []
    for part in argv or []:
        if "{" in part or part.startswith(("-", "/", "~")) or re.match(r"^[a-z][a-z0-9+.-]*://", part, re.I):
            continue
        if "/" in part or os.sep in part or SCRIPT.search(part) or (cwd / part).is_file():
            out.append(part)
    return out


def with_workdir(s: Settings, out_dir: Path, cwd: Path) -> Settings:
    """``s`` with the folder the agent's command runs in, when the command names a relative path: the
    folder adopt runs in, written relative to the draft's folder (a target file's paths start there)."""
    found = relative_paths(s.command, cwd) + relative_paths(s.version_command, cwd)
    if not found:
        return s
    return replace(s, workdir=os.path.relpath(cwd.resolve(), out_dir.resolve()), relative=tuple(found))


class _Lines:
    def __init__(self) -> None:
        self.out: list[str] = []

    def add(self, indent: int, key: str, value: object, comment: str | None = None) -> None:
        pad = "  " * indent
        if comment:
            self.out += [f"{pad}# {line}" for line in _wrap(comment, 100 - len(pad))]
        self.out.append(f"{pad}{key}: {scalar(value)}" if value is not ... else f"{pad}{key}:")

    def text(self, *lines: str) -> None:
        self.out += list(lines)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` as comment lines of at most ``width`` characters, anything a trace put in it shown escaped."""
    lines, cur = [], ""
    for word in [w for w in shown(text, limit=1000).split(" ") if w]:
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return lines + ([cur] if cur else [])


def render(f: Findings, s: Settings, header: list[str]) -> str:
    out = _Lines()
    out.text(*[f"# {shown(h, limit=400)}" for h in header], "version: 1", "", "target:")
    out.add(1, "name", s.name)
    out.add(1, "command", s.command or ["your-agent", "--session", "{session}", "{query}"],
            "given to adopt (--command)" if s.command else "a placeholder: write the argv of one turn")
    if s.version_command:
        out.add(1, "version_command", s.version_command, "given to adopt (--version-command)")
    if s.workdir is not None:
        out.add(1, "workdir", s.workdir, f"the folder adopt ran in, from this file's folder: the command names "
                f"{', '.join(s.relative[:3])}, relative to it")
    out.add(1, "refusal_exit_code", s.refusal_exit_code if s.refusal_exit_code is not None else 1,
            "given to adopt (--refusal-exit-code)" if s.refusal_exit_code is not None
            else "assumed: a trace does not show exit codes")
    _choice(out, f, 1, "target.answer_from", "answer_from")
    out.text("", "trace_backend:")
    out.add(1, "kind", s.kind, "where adopt read the traces")
    out.add(1, "project", s.project)
    out.text("", "correlation:")
    for key in ("match", "metadata_key", "env_var"):
        _choice(out, f, 1, f"correlation.{key}", key)
    out.text("", "# Pointers start at the span as `obai-e2e traces sample --json` prints it.", "vocabulary:")
    for key in ("hub_span", "guardrail_span", "guardrail_allowed_field", "guardrail_allowed_values",
                "guardrail_refused_values", "skill_load_span", "skill_name_field", "specialist_span",
                "specialist_type", "specialists"):
        _choice(out, f, 1, f"vocabulary.{key}", key)
    if "adopt.answer_tools" in f.choices:
        out.text(*[f"  # {line}" for line in _wrap("No specialist: " + f.choices["adopt.answer_tools"].source, 96)])
    _choice(out, f, 1, "vocabulary.options_specialist", "options_specialist")
    output = [k for k in ("text", "data", "errors") if f.get(f"vocabulary.specialist_output.{k}") is not None]
    if output:
        out.text("  specialist_output:")
        for key in output:
            _choice(out, f, 2, f"vocabulary.specialist_output.{key}", key)
    elif "vocabulary.specialist_output" in f.choices:
        out.text(*[f"  # {line}" for line in _wrap(f.choices["vocabulary.specialist_output"].source, 96)])
    _choice(out, f, 1, "vocabulary.options_payload", "options_payload")
    if f.get("rubric.refusal_patterns"):
        out.text("", "rubric:")
        _choice(out, f, 1, "rubric.refusal_patterns", "refusal_patterns")
    out.text("", "run:")
    out.add(1, "catalog", DEFAULT_CATALOG, "the bundle's loss catalog ({bundle}: the harness bundle's folder)")
    return "\n".join(out.out) + "\n"


def _choice(out: _Lines, f: Findings, indent: int, key: str, name: str) -> None:
    c = f.choices.get(key)
    if c is None:
        return
    if c.value is None:
        out.text(*[f"{'  ' * indent}# {name}: (none) — {line}" if i == 0 else f"{'  ' * indent}#   {line}"
                   for i, line in enumerate(_wrap(c.source, 90))])
        return
    out.add(indent, name, c.value, "from " + c.source if not c.source.startswith(("a guess", "a placeholder"))
            else c.source)
