"""harbor-desk: ``ask [--session ID] QUESTION`` answers one question; ``faults`` lists the faults.

stdout: one JSON object ``{"session", "answer", "outcome"}``. Exit codes: 0 answered, 2 usage
error, 3 refused by the screen, 70 a desk raised.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import sys
import uuid
from types import ModuleType
from typing import Iterator

from . import __version__
from . import faults as faults_mod

EXIT_REFUSED, EXIT_RAISED = 3, 70


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harbor-desk", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"harbor-desk {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer one question")
    ask.add_argument("--session", help="the conversation id recorded on the trace (default: a new one)")
    ask.add_argument("question")
    sub.add_parser("faults", help="print the faults as JSON")
    return p


@contextlib.contextmanager
def _models_built_on_first_use() -> Iterator[None]:
    """pydantic models declared meanwhile get their validators when first used (``defer_build``)."""
    try:
        from pydantic._internal._config import config_defaults
    except ImportError:  # a pydantic that keeps them elsewhere: built at once, as usual
        yield
        return
    saved = dict(config_defaults)
    config_defaults["defer_build"] = True
    try:
        yield
    finally:
        config_defaults.clear()
        config_defaults.update(saved)


@functools.lru_cache(maxsize=None)
def _desk() -> tuple[ModuleType, ModuleType]:
    """The agent and its tracing (PydanticAI, OpenTelemetry), imported once: half the CPU of a plain import.

    PydanticAI declares many pydantic models and a turn uses few, so each is built when first
    used. The import frees nothing: the garbage collector waits until it is over, and what it
    built is then frozen out of later collections, the one at exit included.
    """
    collecting = gc.isenabled()
    gc.disable()
    with _models_built_on_first_use():
        from . import agent, tracing
    if collecting:
        gc.enable()
    gc.freeze()
    return agent, tracing


def _ask(args) -> int:
    if not args.question.strip():
        print("harbor-desk: the question is empty", file=sys.stderr)
        return 2
    try:
        active = faults_mod.active()
    except ValueError as exc:
        print(f"harbor-desk: {exc}", file=sys.stderr)
        return 2
    session = args.session or uuid.uuid4().hex
    agent, tracing = _desk()
    tp = tracing.provider()
    try:
        out = agent.run_turn(args.question, session, active, tp)
    except Exception as exc:  # a desk raised: the trace carries it, the caller gets exit 70
        print(json.dumps({"session": session, "error": f"{type(exc).__name__}: {exc}"}))
        return EXIT_RAISED
    finally:
        if tp is not None:
            tp.shutdown()
            if tracing.CountingExporter.refused:
                print(f"harbor-desk: the trace backend refused {tracing.CountingExporter.refused} export(s)",
                      file=sys.stderr)
    print(agent.as_json(out, session))
    return EXIT_REFUSED if out.outcome == "refused" else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "faults":
        print(json.dumps(faults_mod.FAULTS, indent=1))
        return 0
    return _ask(args)
