"""``python -m obai_e2e.tracestore ACTION ...``: ``obai-e2e traces`` without the rest of the CLI.

The background server is started this way, so that its start-up does not pay for
importing every other command.
"""
import argparse
import sys

from ..cli import run_command
from ..commands import traces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="obai-e2e")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    traces.register(sub)
    args = parser.parse_args(["traces", *(sys.argv[1:] if argv is None else argv)])
    return run_command(args.func, args)


sys.exit(main())
