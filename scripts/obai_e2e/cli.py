"""The ``obai-e2e`` command line.

Each subcommand lives in ``obai_e2e.commands.<name>``, packs its arguments and calls the
core; the core never parses argv. Errors a person can act on are printed as one line on
stderr and, unless stdout is an interactive terminal (without ``--json``), as one JSON object on
stdout; they end the process with the error's exit code.
SIGINT and SIGTERM are handled from the first line of :func:`main`, before a command and
its dependencies are imported: a signal at any moment ends the command with exit 130.
"""
from __future__ import annotations

import sys

from .base import interrupts

# Command name -> module under obai_e2e.commands, in the order --help lists them. Only the
# module of the command being run is imported, so a script starts in a fraction of a second.
COMMANDS = {
    "preflight": "preflight",
    "new-run": "new_run",
    "plan": "plan",
    "run-one": "run_one",
    "drive": "drive",
    "resolve-trace": "resolve_trace",
    "inspect-trace": "inspect_trace",
    "check-case": "check_case",
    "review": "review",
    "record-verdict": "record_verdict",
    "finalize": "finalize_run",
    "run": "run",
    "merge-runs": "merge_runs",
    "plan-loss": "plan_loss",
    "pilot": "pilot",
    "score-loss": "score_loss",
    "prune-korpus": "prune_korpus",
    "freeze-audit": "freeze_audit",
    "traces": "traces",
    "adopt": "adopt",
    "render-report": "render_report",
    "install": "install",
    "judge-packets": "judge_packets",
    "judge-response": "judge_response",
    "aggregate-judges": "aggregate_judges",
    "judge-panel": "judge_panel",
    "replay-judges": "replay_judges",
}


def build_parser(only: str | None = None):
    import argparse
    import importlib

    from .base.version import __version__

    parser = argparse.ArgumentParser(
        prog="obai-e2e",
        description="End-to-end regression harness for the OBaI agent CLI.",
    )
    parser.add_argument("--version", action="version", version=f"obai-e2e {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"obai_e2e.commands.{module}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; ``argv`` None: this process's own arguments (it ends when this returns)."""
    interrupts.install()
    program = argv is None
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        only = argv[0] if argv and argv[0] in COMMANDS else None
        args = build_parser(only).parse_args(argv)
        return run_command(args.func, args)
    except KeyboardInterrupt:
        return _interrupted()
    finally:
        interrupts.release(quiet=program)


def run_command(func, args) -> int:
    """Run one command function, turning our errors into JSON + exit code."""
    from .base.errors import ObaiError
    from .base.output import emit, wants_json

    try:
        code = func(args)
    except ObaiError as exc:
        if wants_json(getattr(args, "json", False)):  # in a terminal the line below says it once
            emit(exc.to_json())
        print(f"obai-e2e: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted()
    return int(code or 0)


def _interrupted() -> int:
    from .base.errors import Exit

    print("obai-e2e: interrupted", file=sys.stderr)
    return Exit.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
