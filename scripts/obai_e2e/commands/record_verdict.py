"""obai-e2e record-verdict: validate a judge's verdict(s) and record each with its report row."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from ..base.errors import UsageError
from ..base.modeltext import inline
from ..base.output import emit, emit_compact
from ._common import add_config_args, load_plan

MAX_VERDICT_BYTES = 1 << 20   # one verdict (--verdict): 1 MiB
MAX_BATCH_BYTES = 8 << 20     # a batch (--batch): 8 MiB, far above 5,000 verdicts of a page


def register(sub) -> None:
    p = sub.add_parser("record-verdict", help="record a judge's verdict for one unit, or many at once",
                       description="Validates each verdict against its case's contract (and, for a judge's verdict, "
                                   "an answer to every open question of the unit), writes <ID>.verdict.json once and "
                                   "appends the report.md row (and the detail block for fail / needs_review). The "
                                   "same verdict again is a no-op; a different one is refused. --batch takes one "
                                   "verdict per line (JSON Lines), records the valid ones and names every refused "
                                   "one with its line, unit and its problems, each quoted bounded (exit 2); a line that "
                                   "is not UTF-8 is refused alone. Input is read up to a cap: 1 MiB for --verdict, "
                                   "8 MiB for --batch; lines are split on line feeds only.")
    p.add_argument("--id", help="the unit (with --verdict or --mechanical)")
    p.add_argument("--run-dir", required=True, type=Path)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--verdict", help="verdict JSON text, a path to a JSON file, or - for stdin")
    src.add_argument("--mechanical", action="store_true", help="record the verdict the mechanical rubric implies")
    src.add_argument("--batch", metavar="FILE", help="JSON Lines of verdicts, each naming its unit_id (- for stdin)")
    add_config_args(p)
    p.set_defaults(func=run)


def _read_bounded(value: str, what: str, limit: int) -> bytes:
    """The bytes of ``value`` (a path, or - for stdin), refused unread when a regular file is over
    ``limit`` and refused after ``limit`` + 1 bytes from a pipe: never read whole when too big."""
    if value == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        try:
            fd = os.open(value, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {inline(value)} ({exc.strerror or exc})") from None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"{what}: {inline(value)} is not a regular file (a file of JSON text, or - for "
                                 "stdin)")
            if info.st_size > limit:
                raise UsageError(f"{what}: {inline(value)} has {info.st_size:,} bytes; at most {limit:,} are read")
            data = f.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"{what}: more than {limit:,} bytes on stdin; at most {limit:,} are read (send fewer "
                         "verdicts per call)")
    return data


def read_text_arg(value: str, what: str, limit: int = MAX_BATCH_BYTES) -> str:
    """The UTF-8 text of ``value`` (a path, or - for stdin), at most ``limit`` bytes."""
    data = _read_bounded(value, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what}: not UTF-8 text ({exc.reason} at byte offset {exc.start:,})") from None


def read_json_arg(value: str, what: str) -> dict:
    """One verdict: JSON text given inline, a path to a JSON file, or - for stdin; read as each
    line of a batch is (report/record_batch.parse_verdict)."""
    from ..report.record_batch import parse_verdict

    inline_json = value != "-" and value.lstrip().startswith("{")
    if inline_json:
        if len(value) > MAX_VERDICT_BYTES:
            raise UsageError(f"{what}: {len(value):,} characters; at most {MAX_VERDICT_BYTES:,} are read")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # bytes that are no UTF-8, passed through the argument list
            raise UsageError(f"{what}: not UTF-8 text (a byte that is no UTF-8 at character {exc.start:,})") from None
    text = value if inline_json else read_text_arg(value, what, MAX_VERDICT_BYTES)
    return parse_verdict(text, what)


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
        data = _read_bounded(args.batch, "--batch", MAX_BATCH_BYTES)  # decoded line by line: a bad one is refused
        with RunLock(args.run_dir, timeout_s=30):
            ok, out = record_batch(config, args.run_dir, plan.units, data)
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
