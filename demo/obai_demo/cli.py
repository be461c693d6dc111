"""The ``obai-demo`` command line: ``obai-demo ask [--session SID] QUERY`` and ``obai-demo serve``.

``ask``: stdout carries the final answer only; diagnostics go to stderr. Exit codes: 0
answered, 1 refused by the guardrail, 2 usage error, 4 unknown job, 70 internal error.
``serve``: one JSON line on stdout once the web chat listens; exit 0 after SIGTERM or
SIGINT, 2 usage error, 3 the port is taken.
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
DEFAULT_PORT = 8765
OUTAGE_FILE = "backend-down"


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
    serve = sub.add_parser(
        "serve", help="a local web chat over the same hub (127.0.0.1 only; one trace per question)",
        description="Serve the web chat on 127.0.0.1 until SIGTERM or SIGINT. Prints one JSON line "
                    '({"status": "serving", "url", "health", "port", "pid", "outage_file"}) once it listens.',
    )
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N",
                       help=f"TCP port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    serve.add_argument("--outage-file", metavar="PATH",
                       help="while this file exists the backend counts as down: questions get HTTP 503 and "
                            "/healthz reports down (default: $OBAI_DEMO_HOME/backend-down)")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "serve":
        return serve(args)
    return ask(args)


def serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .settings import Settings, UsageError
    from .web.server import serve as run_server

    try:
        settings = Settings.from_env()
        if not 0 <= args.port <= 65535:
            raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    except UsageError as exc:
        print(f"obai-demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    outage = Path(args.outage_file).expanduser() if args.outage_file else settings.home / OUTAGE_FILE
    return run_server(args.port, settings, outage)


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
