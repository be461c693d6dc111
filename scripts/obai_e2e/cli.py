"""The ``obai-e2e`` command line.

Each subcommand lives in ``obai_e2e.commands.<name>``, packs its arguments and calls the
core; the core never parses argv. Errors a person can act on are printed as one JSON
object on stdout and one line on stderr, and end the process with the error's exit code.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import ObaiError
from .output import emit

# Module names under obai_e2e.commands, in the order --help lists them.
COMMANDS = [
    "preflight",
    "new_run",
    "plan",
    "run_one",
    "resolve_trace",
    "inspect_trace",
    "check_case",
    "record_verdict",
    "finalize_run",
    "run",
    "plan_loss",
    "score_loss",
    "prune_korpus",
    "freeze_audit",
    "traces",
    "render_report",
    "install",
    "judge_packets",
    "judge_response",
    "aggregate_judges",
    "replay_judges",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="obai-e2e",
        description="End-to-end regression harness for the OBaI agent CLI.",
    )
    parser.add_argument("--version", action="version", version=f"obai-e2e {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"obai_e2e.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_command(args.func, args)


def run_command(func, args) -> int:
    """Run one command function, turning our errors into JSON + exit code."""
    try:
        code = func(args)
    except ObaiError as exc:
        emit(exc.to_json())
        print(f"obai-e2e: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("obai-e2e: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
