"""``ledger-agent``: ask the ledger assistant one question.

``ledger-agent chat [--conversation ID] --message TEXT`` prints one JSON object on stdout,
``{"conversation", "reply", "outcome"}``; diagnostics go to stderr. Exit codes: 0 answered,
3 refused by the policy check, 2 usage error, 70 internal error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
import uuid

from . import __version__

EXIT_USAGE = 2
EXIT_INTERNAL = 70
CONVERSATION_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

ENVIRONMENT = """environment:
  LEDGER_RUN_REF       stored in the trace's metadata as run_ref (ties a turn to its trace)
  LEDGER_TIER          retail (default) or pro; options analysis needs pro
  LEDGER_FAULTS        comma-separated faults to inject (ledger-agent faults lists them)
  LEDGER_THINK_MS      extra milliseconds spent before the reply is written
  LEDGER_TRACE         on (default) or off
  LEDGER_OPIK_PROJECT  Opik project of the traces (default ledger-agent)
  OPIK_URL_OVERRIDE, OPIK_API_KEY, OPIK_WORKSPACE, ~/.opik.config: where traces go

exit codes: 0 answered, 3 refused, 2 usage error, 70 internal error"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ledger-agent",
        description="A small finance assistant answering from a bundled book of figures; every turn is "
                    "logged to Opik as one trace.",
        epilog=ENVIRONMENT, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ledger-agent {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chat = sub.add_parser("chat", help="answer one message (one turn, one trace)", epilog=ENVIRONMENT,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    chat.add_argument("--conversation", metavar="ID", help="conversation id (default: a new random id)")
    chat.add_argument("-m", "--message", required=True, metavar="TEXT", help="the question")
    sub.add_parser("faults", help="list the injectable faults as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "faults":
        from .faults import FAULTS

        print(json.dumps({name: {"finding": code, "effect": text} for name, (code, text) in FAULTS.items()},
                         indent=2))
        return 0
    return chat(args.message, args.conversation)


def chat(message: str, conversation: str | None) -> int:
    from . import turn

    question = message.strip()
    conversation = conversation or uuid.uuid4().hex[:16]
    try:
        settings = turn.Settings.from_env()
        if not question:
            raise turn.UsageError("the message is empty")
        if not CONVERSATION_ID.match(conversation):
            raise turn.UsageError(f"invalid conversation id {conversation!r}: 1-64 letters, digits, '.', '_', '-'")
    except turn.UsageError as exc:
        print(f"ledger-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        reply = turn.run(question, settings)
    except Exception:
        traceback.print_exc()
        return EXIT_INTERNAL
    print(json.dumps({"conversation": conversation, "reply": reply.text, "outcome": reply.outcome},
                     ensure_ascii=False), flush=True)
    if settings.trace:
        from .recorder import write

        fields = turn.trace_fields(question, conversation, reply, settings)
        if not write(settings.project, fields.pop("trace_name"), reply.root, **fields):
            print("ledger-agent: the trace was not delivered in time; leaving without it", file=sys.stderr,
                  flush=True)
            os._exit(reply.exit_code)
    return reply.exit_code


if __name__ == "__main__":
    sys.exit(main())
