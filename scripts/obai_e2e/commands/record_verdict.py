"""obai-e2e record-verdict: validate a judge's verdict(s) and record each with its report row."""
from __future__ import annotations

from pathlib import Path

from ..base import jsonio
from ..base.errors import UsageError
from ..base.safe_read import read_stdin, read_text
from ..base.output import emit, emit_compact
from ._common import add_config_args, load_plan


def register(sub) -> None:
    p = sub.add_parser("record-verdict", help="record a judge's verdict for one unit, or many at once",
                       description="Validates each verdict against its case's contract (and, for a judge's verdict, "
                                   "an answer to every open question of the unit), writes <ID>.verdict.json once and "
                                   "appends the report.md row (and the detail block for fail / needs_review). The "
                                   "same verdict again is a no-op; a different one is refused. --batch takes one "
                                   "verdict per line (JSON Lines), records the valid ones and names every refused "
                                   "one with its line, unit and all its problems (exit 2).")
    p.add_argument("--id", help="the unit (with --verdict or --mechanical)")
    p.add_argument("--run-dir", required=True, type=Path)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--verdict", help="verdict JSON text, a path to a JSON file, or - for stdin")
    src.add_argument("--mechanical", action="store_true", help="record the verdict the mechanical rubric implies")
    src.add_argument("--batch", metavar="FILE", help="JSON Lines of verdicts, each naming its unit_id (- for stdin)")
    add_config_args(p)
    p.set_defaults(func=run)


# What one file of verdicts may hold: far more than any suite's verdicts, far less than memory.
MAX_INPUT_BYTES = 16_000_000


def read_text_arg(value: str, what: str) -> str:
    if value == "-":
        return read_stdin(limit=MAX_INPUT_BYTES, what=f"{what} on standard input")
    try:
        return read_text(value, limit=MAX_INPUT_BYTES, what=what)
    except OSError as exc:
        raise UsageError(f"{what}: cannot read {value} ({exc.strerror or exc})") from None


def read_json_arg(value: str, what: str) -> dict:
    text = value if value != "-" and value.lstrip().startswith("{") else read_text_arg(value, what)
    return jsonio.loads(text, source=what, error=UsageError)


def run(args) -> int:
    from ..report.record_batch import record_batch, record_judged
    from ..rundir.lock import RunLock
    from ..run.judging import judge_unit

    if args.batch is None and not args.id:
        raise UsageError("--id names the unit of --verdict and --mechanical (or use --batch)")
    if args.batch is not None and args.id:
        raise UsageError("--batch verdicts name their units themselves: drop --id")
    config, _, plan = load_plan(args)
    if args.batch is not None:
        text = read_text_arg(args.batch, "--batch")
        with RunLock(args.run_dir, timeout_s=30):
            ok, out = record_batch(config, args.run_dir, plan.units, text)
        emit_compact(out)
        return 0 if ok else 2
    unit = plan.unit(args.id)
    with RunLock(args.run_dir, timeout_s=30):
        if args.mechanical:
            result = judge_unit(config, args.run_dir, unit)
        else:
            result = record_judged(config, args.run_dir, unit, read_json_arg(args.verdict, "verdict"))
    emit(result)
    return 0
