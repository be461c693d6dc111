"""obai-e2e preflight: is everything ready for a run?"""
from __future__ import annotations

from pathlib import Path

from ..base.errors import Exit
from ..base.output import emit_compact


def register(sub) -> None:
    p = sub.add_parser("preflight", help="check that a regression run can start",
                       description="Runs its checks in order and stops at the first that fails: exit 0 when ready; "
                                   "otherwise exit 4 with the reason and the next step. A configuration or cases "
                                   "file that fails lists every problem at once (problems: where, field, message, "
                                   "and write: the value to write when it is known), so one run names all a file "
                                   "of an earlier release must change; past 50, problems_total counts them and "
                                   "problems_file lists them all.")
    p.add_argument("--target", type=Path, default=None, help="target configuration file")
    p.add_argument("--cases", type=Path, default=None, help="cases file (default: cases/cases.yaml of the bundle)")
    p.add_argument("--no-start", action="store_true", help="do not start the local trace store")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..run import preflight as core

    report = core.run(args.target, args.cases, start_store=not args.no_start)
    emit_compact(report.to_json())
    return Exit.OK if report.ready else Exit.NOT_READY
