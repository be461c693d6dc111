"""obai-e2e new-run: create a run directory for the selected cases."""
from __future__ import annotations

from ..base.output import emit_flat
from ._common import (
    add_config_args,
    add_filter_args,
    add_sample_args,
    filters_from,
    load,
    sampled,
)


def register(sub) -> None:
    p = sub.add_parser("new-run", help="create runs/<date>/<time>/ with run.json and the report header",
                       description="Creates the run directory once and prints its path and the units to drive: one JSON "
                                   "object, one key per line (the unit ids of a list on one line).")
    add_config_args(p)
    add_filter_args(p)
    add_sample_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..run.plan import create_run, plan

    config, cases = load(args)
    filters, repeats, extra = sampled(args, cases, filters_from(args), config.plan)
    run_dir, meta = create_run(config, cases, filters, repeats=repeats, extra=extra)
    p = plan(run_dir, cases, filters)
    emit_flat({"status": "created", "run_dir": str(run_dir), "run_id": meta.run_id, "units": len(p.units),
               **p.to_json()})
    return 0
