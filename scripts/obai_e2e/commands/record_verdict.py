"""obai-e2e record-verdict: validate a verdict and record it with its report row."""
from __future__ import annotations

import sys
from pathlib import Path

from ..base import jsonio
from ..base.errors import UsageError
from ..base.output import emit
from ._common import add_config_args, load_plan


def register(sub) -> None:
    p = sub.add_parser("record-verdict", help="record a judge's verdict for one unit",
                       description="Validates the verdict JSON against the case's contract, writes "
                                   "<ID>.verdict.json once and appends the report.md row (and the detail block "
                                   "for fail / needs_review). The same verdict again is a no-op; a different one "
                                   "is refused.")
    p.add_argument("--id", required=True)
    p.add_argument("--run-dir", required=True, type=Path)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--verdict", help="verdict JSON text, a path to a JSON file, or - for stdin")
    src.add_argument("--mechanical", action="store_true", help="record the verdict the mechanical rubric implies")
    add_config_args(p)
    p.set_defaults(func=run)


def read_json_arg(value: str, what: str) -> dict:
    if value == "-":
        text = sys.stdin.read()
    elif value.lstrip().startswith("{"):
        text = value
    else:
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {value} ({exc.strerror})") from None
    return jsonio.loads(text, source=what, error=UsageError)


def run(args) -> int:
    from ..report.record import record
    from ..run.judging import judge_unit
    from ..rundir.lock import RunLock

    config, _, plan = load_plan(args)
    unit = plan.unit(args.id)
    with RunLock(args.run_dir, timeout_s=30):
        if args.mechanical:
            result = judge_unit(config, args.run_dir, unit)
        else:
            result = record(config, args.run_dir, unit, read_json_arg(args.verdict, "verdict"))
    emit(result)
    return 0
