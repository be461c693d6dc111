"""``obai-e2e adopt`` end to end: sample traces, read their shape, write the draft, check it on them.

The backend and the selection go in; target.yaml and cases.yaml are written to the output
folder (never over existing files unless forced), and a summary comes out: every choice
with the span it came from, what could not be decided, and the check of each trace.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base import jsonptr
from ..base.clock import iso, utc_now
from ..base.errors import ConfigError, UsageError
from ..base.fsutil import atomic_write_text
from ..config.cases import load_cases_for
from ..config.target import load_target_config
from ..trace.backend import Backend
from ..trace.curate import curate
from . import answer_tools, cases_text, correlation, options, payloads, roles, selfcheck, target_text, validate
from .choices import Findings
from .sample import Sampled, sample
from .target_text import Settings


@dataclass(frozen=True)
class Shape:
    """What the traces say: every choice and open question, the question's pointer, the spans' roles."""

    findings: Findings
    query_at: str | None
    roles: roles.Roles


def read_shape(samples: list[Sampled], settings: Settings) -> Shape:
    """Every choice the traces support (and what they leave open); the pointer of the question in a trace's input."""
    f, r = Findings(), roles.Roles()
    roles.find_hub(samples, f, r)
    roles.find_skills(samples, f, r)
    roles.find_specialists(samples, f, r)
    roles.find_guardrail(samples, f, r)
    payloads.find_decision(samples, f, r)
    query_at = payloads.find_query(samples, f)
    payloads.find_answer(samples, f, r, query_at)
    answer_tools.find_answer_tools(samples, f, r)
    payloads.find_specialist_output(samples, f, r)
    options.find_options(samples, f, r)
    _refusals(samples, f, r)
    correlation.suggest(samples, f, settings.command)
    if settings.refusal_exit_code is None:
        f.leave("target.refusal_exit_code", "a trace does not show the exit code of a refused turn (1 assumed)",
                "pass --refusal-exit-code, or set target.refusal_exit_code")
    return Shape(f, query_at, r)


def _refusals(samples: list[Sampled], f: Findings, r: roles.Roles) -> None:
    """A refusal pattern per distinct refusal answer seen, so refusal cases are judged on their wording."""
    answer_from = f.get("target.answer_from") or ""
    if not answer_from.startswith("trace_output:"):
        return
    pointer = answer_from.split(":", 1)[1]
    texts = []
    for s in samples:
        if not payloads.refused(s, f, r):
            continue
        value = jsonptr.resolve(s.trace.get("output"), pointer)
        if isinstance(value, str) and value.strip():
            first = re.split(r"(?<=[.!?])\s", value.strip(), maxsplit=1)[0].rstrip(".!?")
            texts.append(f"(?i){re.escape(first)}")
    if texts:
        f.choose("rubric.refusal_patterns", list(dict.fromkeys(texts)), "the answers of the refused traces")


def adopt(backend: Backend, settings: Settings, out_dir: Path, *, limit: int = 20, tag: str | None = None,
          since: str | None = None, force: bool = False) -> dict:
    """Sample the backend's traces, then ``draft`` from them (each trace also resolved through the backend)."""
    _writable(out_dir, force)
    return draft(sample(backend, limit=limit, tag=tag, since=since), settings, out_dir, backend=backend, force=force)


def _writable(out_dir: Path, force: bool) -> None:
    for path in (out_dir / "target.yaml", out_dir / "cases.yaml"):
        if path.exists() and not force:
            raise UsageError(f"{path} exists: adopt writes a new draft; pass --force to replace it, or --out "
                             "another folder")


def draft(samples: list[Sampled], settings: Settings, out_dir: Path, *, backend: Backend | None = None,
          force: bool = False) -> dict:
    """Write target.yaml and cases.yaml from ``samples`` and check them on the same traces.

    The draft is written to a staging folder inside ``out_dir`` first, loaded and checked
    there, and moved into place only then: a draft that does not load leaves nothing behind.
    Without a backend the traces are curated and judged but not resolved.
    """
    _writable(out_dir, force)
    settings = target_text.with_workdir(settings, out_dir, Path.cwd())
    shape = read_shape(samples, settings)
    made = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".adopt-draft-", dir=out_dir))
    try:
        summary = _draft_in(stage, samples, settings, shape, backend)
        for name in ("target.yaml", "cases.yaml"):
            os.replace(stage / name, out_dir / name)
    except ConfigError as exc:
        raise ConfigError(f"adopt wrote nothing: the draft does not load ({str(exc).replace(str(stage), str(out_dir))})"
                          f"{_open_questions(shape.findings)}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if made and not any(out_dir.iterdir()):
            out_dir.rmdir()
    summary.update(target=str(out_dir / "target.yaml"), cases=str(out_dir / "cases.yaml"))
    return summary


def _open_questions(f: Findings) -> str:
    return "".join(f"; {u.key}: {u.why}" for u in f.undecided if u.key == "cases")


def _draft_in(stage: Path, samples: list[Sampled], settings: Settings, shape: Shape, backend: Backend | None) -> dict:
    """Write the draft into ``stage``, load it back, check it on the traces and against itself."""
    f, r = shape.findings, shape.roles
    target_path, cases_path = stage / "target.yaml", stage / "cases.yaml"
    header = [f"Drafted by `obai-e2e adopt` from {len(samples)} trace(s) of project {settings.project!r} "
              f"({settings.kind}) on {iso(utc_now())[:19]}Z.",
              "Each value says which span or trace it was read from; the command printed what it could not decide."]
    atomic_write_text(target_path, target_text.render(f, settings, header))
    config = load_target_config(target_path)
    curated = [curate(s.trace, s.spans, config.vocabulary) for s in samples]
    queries = [_query(s, shape.query_at) for s in samples]
    shapes = [options.shape(s, r, q or "") if config.vocabulary.options_specialist else None
              for s, q in zip(samples, queries)]
    starters = cases_text.starter_cases(samples, [c.digest for c in curated], queries, f, shapes)
    if not starters:
        raise ConfigError(f"{cases_path}: no case: no sampled trace has a question adopt could read")
    atomic_write_text(cases_path, cases_text.render(starters, [
        "Starter cases drafted by `obai-e2e adopt`: one per sampled question, expecting what the agent did then.",
        "Edit the expectations to what it should do, and add the cases that matter to you."]))
    cases = {c.id: c for c in load_cases_for(config, cases_path).cases}
    by_trace = {c["_trace"]: c["id"] for c in starters}
    rows = [validate.check(backend, config, cases, s, cur, by_trace.get(s.id), q or "", r.answer_tools)
            for s, cur, q in zip(samples, curated, queries)]
    itself = selfcheck.self_check(config, cases, samples, by_trace, f)
    return {"status": "drafted" if itself["ok"] else "unsound", "traces": [s.id for s in samples],
            "choices": [c.to_json() for c in f.choices.values()],
            "undecided": [u.to_json() for u in f.undecided], "checked": rows, "self_check": itself}


def _query(s: Sampled, pointer: str | None) -> str | None:
    if pointer is None:
        return None
    value = jsonptr.resolve(s.trace.get("input"), pointer)
    return value if isinstance(value, str) else None
