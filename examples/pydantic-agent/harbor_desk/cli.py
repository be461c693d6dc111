"""harbor-desk: ``ask [--session ID] QUESTION`` answers one question; ``faults`` lists the faults.

stdout: one JSON object ``{"session", "answer", "outcome"}``. Exit codes: 0 answered, 2 usage
error, 3 refused by the screen, 70 a desk raised.
"""
from __future__ import annotations

import argparse
import json
import sys
import uuid

from . import __version__, faults as faults_mod, tracing
from .agent import as_json, run_turn

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
    tp = tracing.provider()
    try:
        out = run_turn(args.question, session, active, tp)
    except Exception as exc:  # a desk raised: the trace carries it, the caller gets exit 70
        print(json.dumps({"session": session, "error": f"{type(exc).__name__}: {exc}"}))
        return EXIT_RAISED
    finally:
        if tp is not None:
            tp.shutdown()
            if tracing.CountingExporter.refused:
                print(f"harbor-desk: the trace backend refused {tracing.CountingExporter.refused} export(s)",
                      file=sys.stderr)
    print(as_json(out, session))
    return EXIT_REFUSED if out.outcome == "refused" else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "faults":
        print(json.dumps(faults_mod.FAULTS, indent=1))
        return 0
    return _ask(args)
