"""obai-e2e plan: which units of a run are still to drive or to judge."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit
from ..run.plan import plan
from ..rundir.meta import load_run
from ._common import add_config_args, add_filter_args, filters_from, load


def register(sub) -> None:
    p = sub.add_parser("plan", help="list pending units of a run (resume)",
                       description="pending: no packet yet (drive them); to_judge: packet but no report row; "
                                   "done: judged. Filters default to the run's own.")
    p.add_argument("--run-dir", required=True, type=Path)
    add_config_args(p)
    add_filter_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    _, cases = load(args)
    meta = load_run(args.run_dir)
    given = filters_from(args)
    filters = given if (given.smoke or given.features or given.ids) else meta.selection_filters
    emit({"run_dir": str(args.run_dir), **plan(args.run_dir, cases, filters).to_json()})
    return 0
