"""obai-e2e judge-response: store one judge's raw reply, write-once, with its validation."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import UsageError
from ..base.output import emit
from ..base.safe_read import read_stdin, read_text
from ..judge.panel.responses import MAX_RAW_BYTES, store
from ..judge.panel.rounds import judging_lock


def register(sub) -> None:
    p = sub.add_parser("judge-response", help="store a judge's raw reply to a round's bundle",
                       description="Stores the raw text exactly as received under "
                                   "D/judging/<round>/responses/<judge>.json with the model, the time and the "
                                   "parse and validation result (per packet: valid, repaired, refused with the "
                                   "JSON pointer, or absent). Invalid JSON is recorded as a parse failure. The "
                                   "same text again is a no-op; a different one is refused.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--round", required=True)
    p.add_argument("--judge", required=True, help="judge label, e.g. J1")
    p.add_argument("--model", required=True, help="the model that answered")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", help="file holding the raw reply (- for stdin)")
    src.add_argument("stdin", nargs="?", choices=["-"], help="- reads the raw reply from stdin")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.stdin == "-" or args.file == "-":
        raw = read_stdin(limit=MAX_RAW_BYTES, what="the reply on standard input")
    else:
        try:
            raw = read_text(args.file, limit=MAX_RAW_BYTES, what="--file")
        except OSError as exc:
            raise UsageError(f"--file {args.file}: cannot read it ({exc.strerror or exc})") from None
    with judging_lock(args.run_dir):
        emit(store(args.run_dir, args.round, args.judge, args.model, raw))
    return 0
