"""obai-e2e drive: drive every pending unit of a run in the background, up to the mechanical check."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit_compact
from ._common import add_config_args, count, seconds

MAX_WAIT_S = 540.0


def register(sub) -> None:
    p = sub.add_parser("drive", help="drive every pending unit of a run (background worker; poll with the same command)",
                       description="Drives every unit of the run directory that has no packet yet, --jobs turns at a "
                                   "time, through the same pipeline as `run` (turn, trace, curated trace, mechanical "
                                   "check), and records no verdict. The work runs in a background process; this "
                                   "command starts it when none runs, waits at most --wait seconds, and prints one "
                                   "line per unit finished since the last call (id, verdict by the rules, codes, open "
                                   "questions). status running: call it again; done: every unit is driven, with the "
                                   "closing count. A killed drive resumes with the next call.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--jobs", type=count(1, 256), default=1,
                   help="turns of the target running at the same time (1-256, default 1)")
    p.add_argument("--wait", type=seconds(MAX_WAIT_S), default=100.0, metavar="S",
                   help=f"wait at most S seconds before reporting (default 100, at most {MAX_WAIT_S:g}); the drive "
                        "goes on in the background either way")
    p.add_argument("--stop", action="store_true", help="stop a running drive (the units in flight stay pending)")
    p.add_argument("--worker", action="store_true", help="(internal) be the background worker")
    add_config_args(p)
    p.set_defaults(func=run)


def _take_held_environ() -> None:
    """The worker's share of the secret-looking variables, which the poll that started it writes to its
    standard input (run.drive_poll.worker_environ): into this process's memory, never its environment block."""
    import json
    import os
    import sys

    from ..base.errors import UsageError
    from ..base.safe_read import read_stdin

    if sys.stdin is None or sys.stdin.isatty():
        return
    text = read_stdin(limit=1_000_000, what="the drive worker's input")
    try:
        held = json.loads(text) if text.strip() else {}
    except ValueError:
        held = None
    if not isinstance(held, dict):
        raise UsageError("drive --worker: its standard input is not the JSON object a poll writes there")
    os.environ.update({str(k): str(v) for k, v in held.items()})


def run(args) -> int:
    run_dir = Path(args.run_dir).resolve()
    if args.worker:
        from ..run.batch_drive import drive_run
        from ._common import load

        _take_held_environ()
        config, cases = load(args)
        drive_run(config, cases, run_dir, args.jobs)
        return 0
    from ..run.drive_poll import poll, stop

    if args.stop:
        code, out = stop(run_dir)
    else:
        argv = ["drive", "--worker", "--run-dir", str(run_dir), "--jobs", str(args.jobs)]
        for flag in ("target", "cases"):
            if getattr(args, flag):
                argv += [f"--{flag}", str(Path(getattr(args, flag)).resolve())]
        code, out = poll(run_dir, argv, args.wait)
    emit_compact(out)
    return code
