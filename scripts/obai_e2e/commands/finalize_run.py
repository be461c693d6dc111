"""obai-e2e finalize: results.json, runs/latest and the summary line."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit, say, wants_json
from ._common import add_config_args, add_json_arg, load_plan


def register(sub) -> None:
    p = sub.add_parser("finalize", help="write results.json, report.html and results.junit.xml; link runs/latest",
                       description="Refuses while units lack a verdict unless --allow-incomplete. Prints one JSON "
                                   "document on stdout (with --json, or when stdout is not a terminal: its "
                                   "chat_summary is what a chat shows), else the summary line and the report paths.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--allow-incomplete", action="store_true", help="finish with unjudged units marked not_judged")
    p.add_argument("--open", action="store_true", help="open report.html in the browser afterwards")
    add_config_args(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..run.finish import finish
    from ..rundir.lock import RunLock

    config, cases, plan = load_plan(args)
    with RunLock(args.run_dir, timeout_s=30):
        out = finish(config, cases, plan, allow_incomplete=args.allow_incomplete, open_browser=args.open)
    if wants_json(args.json):  # one shape: the document alone (its summary_line, paths and diff_line included)
        emit(out)
        return 0
    say(out["summary_line"])
    say(f"report.md: {out['report_md']}")
    say(f"report.html: {out['report_html']}")
    if out.get("diff_line"):
        say(out["diff_line"])
    for line in out.get("inputs_lines") or []:
        say(line)
    return 0
