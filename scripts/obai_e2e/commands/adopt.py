"""obai-e2e adopt: draft target.yaml and starter cases.yaml from an agent's real traces."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ._common import count

EPILOG = """exit codes:
  0   drafted (the summary lists what could not be decided, and the check of every trace)
  2   bad arguments, the output files exist (--force replaces them), or the draft would not
      load (no question found, say): nothing is written
  4   drafted, but the draft failed its own check (self_check: a number planted in an
      answer was not flagged, or a case missing a specialist did not fail): the files are
      written, status "unsound", and undecided names the part to fix
  9   the trace backend is unreachable, or the local store is not running
  10  no trace matched"""


def register(sub) -> None:
    p = sub.add_parser(
        "adopt", help="draft a target configuration and starter cases from real traces",
        description="Reads the newest N traces of a project (or those with a tag, or since a time), works out which "
                    "spans are the hub, guardrail, skill loads and specialists, where the guardrail's decision, a "
                    "tool's text and error, the question and the answer are, and how a turn can be tied to its "
                    "trace. Writes target.yaml and cases.yaml with every choice commented with the span it came "
                    "from, then resolves, curates and judges those same traces with the draft, replays them with "
                    "a number planted in each answer and with a specialist taken out (the draft must flag both), "
                    "and prints what it could not decide.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--project", required=True, help="the Opik project of the agent's traces")
    p.add_argument("--kind", choices=("local", "opik"), default="local",
                   help="local: the bundled store; opik: your Opik through the SDK's own configuration")
    p.add_argument("--traces", type=count(1, 200), default=20, metavar="N", help="how many traces (default 20)")
    p.add_argument("--tag", help="only traces with this tag")
    p.add_argument("--since", help="only traces started since then: 30m, 2h, 1d or an ISO time")
    p.add_argument("--command", dest="agent_command", metavar="ARGV",
                   help="the agent's command for one turn, as a shell would split it, with {query} and {session}")
    p.add_argument("--version-command", metavar="ARGV", help="the agent's version command, as a shell would split it")
    p.add_argument("--refusal-exit-code", type=count(0, 255), default=None, help="the agent's exit code on a refusal")
    p.add_argument("--name", help="the target's name (default: the project)")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for target.yaml and cases.yaml (default: .)")
    p.add_argument("--force", action="store_true", help="replace target.yaml and cases.yaml in --out")
    p.set_defaults(func=run)


def _argv(text: str | None, flag: str) -> list[str] | None:
    from ..base.errors import UsageError

    if text is None:
        return None
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if not argv:
        raise UsageError(f"{flag}: empty")
    return argv


def run(args) -> int:
    from ..adopt.flow import adopt
    from ..adopt.target_text import Settings
    from ..base.errors import UsageError
    from ..base.output import emit
    from ..trace.backend import connect_to

    command = _argv(args.agent_command, "--command")
    if command is not None and not any("{query}" in part for part in command):
        raise UsageError("--command: the argv must contain the placeholder {query}")
    settings = Settings(name=args.name or args.project, kind=args.kind, project=args.project, command=command,
                        refusal_exit_code=args.refusal_exit_code,
                        version_command=_argv(args.version_command, "--version-command"))
    backend = connect_to(args.kind, args.project, start_local=False)
    summary = adopt(backend, settings, args.out, limit=args.traces, tag=args.tag, since=args.since, force=args.force)
    emit(summary)
    for u in summary["undecided"]:
        print(f"undecided: {u['key']}: {u['why']} → {u['next_step']}", file=sys.stderr)
    for row in summary["checked"]:
        bad = [] if (row.get("resolution") or {}).get("ok", True) else [f"resolution {row['resolution']['status']}"]
        print(f"checked {row['trace_id'][:13]} {row.get('case') or '-'}: {row.get('verdict', '-')} "
              f"{' '.join(row.get('reasons') or [])} {'; '.join(bad + row['unread'])}".rstrip(), file=sys.stderr)
    itself = summary["self_check"]
    print("self-check: " + ", ".join(f"{name.replace('_', ' ')} flagged in {p['flagged']} of {p['checked']} trace(s)"
                                     for name, p in itself.items() if name != "ok")
          + ("" if itself["ok"] else " — the draft is unsound: see undecided"), file=sys.stderr)
    return 0 if itself["ok"] else 4
