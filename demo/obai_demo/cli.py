"""The ``obai-demo`` command line: ``obai-demo ask [--session SID] QUERY``.

stdout carries the final answer only; diagnostics go to stderr. Exit codes: 0 answered,
1 refused by the guardrail, 2 usage error, 4 unknown job, 70 internal error.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
import uuid

from . import __version__

EXIT_USAGE = 2
EXIT_INTERNAL = 70


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="obai-demo",
        description="A deterministic, offline OBaI-like finance agent that traces every turn to Opik.",
    )
    parser.add_argument("--version", action="version", version=f"obai-demo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    ask = sub.add_parser("ask", help="answer one query (one turn, one trace)")
    ask.add_argument("--session", metavar="SID", help="session id (default: a new random id)")
    ask.add_argument("query", nargs="+", metavar="QUERY", help="the question")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return ask(args)


def ask(args: argparse.Namespace) -> int:
    from . import hub
    from .jobs import SESSION_ID
    from .settings import Settings, UsageError

    query = " ".join(args.query).strip()
    session = args.session or uuid.uuid4().hex[:12]
    try:
        settings = Settings.from_env()
        if not query:
            raise UsageError("the query is empty")
        if not SESSION_ID.match(session):
            raise UsageError(f"invalid session id {session!r}: use letters, digits, '.', '_' or '-'")
    except UsageError as exc:
        print(f"obai-demo: {exc}", file=sys.stderr)
        return EXIT_USAGE

    print(f"obai-demo: session {session}", file=sys.stderr)
    try:
        result = hub.run_turn(query, session, settings)
    except Exception:
        traceback.print_exc()
        return _leave(EXIT_INTERNAL)
    for note in result.notes:
        print(f"obai-demo: {note}", file=sys.stderr)
    if result.answer:
        print(result.answer)
    return _leave(result.exit_code)


def _leave(code: int) -> int:
    """Hand the trace to the backend within the flush budget, or exit without it."""
    from . import tracing

    sys.stdout.flush()
    sys.stderr.flush()
    if tracing.finish():
        return code
    print("obai-demo: the trace backend did not take the trace in time; exiting without it",
          file=sys.stderr, flush=True)
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
