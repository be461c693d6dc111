"""obai-e2e review: the units of a run still without a verdict, as their judge reads them."""
from __future__ import annotations

import sys
from pathlib import Path

from ._common import add_config_args, count

FORMATS = ("text", "json")


def register(sub) -> None:
    p = sub.add_parser("review", help="show the units still to judge: question, answer, trace, failed and soft rules",
                       description="Prints, page by page, every unit that has a packet and no verdict: the question, "
                                   "the answer, the curated trace, only the failed and soft rules with their "
                                   "evidence, the open questions, the panel's decisions and the codes a verdict "
                                   "admits (legends once per page). Units with nothing to judge come last, without "
                                   "their trace. Record the page's verdicts, then run it again for the next units.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--id", help="only this unit (with its trace even when nothing is open)")
    p.add_argument("--page", type=count(1, 100000), default=1, help="which page (default 1)")
    p.add_argument("--max-chars", type=count(4000, 28000), default=None,
                   help="size of a page in characters (default: a little under the 30,000 a chat tool shows whole)")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (default: fewer tokens for the same content) or json")
    p.add_argument("--full", action="store_true",
                   help="everything of each unit: every rule outcome with evidence, the whole answer and trace (JSON)")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..run.review import MAX_CHARS, review
    from ._common import load_plan

    config, _, plan = load_plan(args)
    sys.stdout.write(review(config, plan, unit_id=args.id, page=args.page, max_chars=args.max_chars or MAX_CHARS,
                            fmt=args.format, full=args.full))
    return 0
