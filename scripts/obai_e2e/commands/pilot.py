"""obai-e2e pilot: estimate s per partition from R runs and write it into the loss plan."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import ConfigError, UsageError
from ..base.output import result, say
from ._common import (
    add_config_args,
    add_filter_args,
    add_json_arg,
    add_sample_args,
    filters_from,
    load,
    sampled,
)

DEFAULT_REPEATS = 5


def register(sub) -> None:
    p = sub.add_parser(
        "pilot", help="drive the selected cases R times (or read R finished runs) and write pilot estimates of s "
                      "per partition into the loss plan",
        description="Estimates s per partition as the spread of the unit losses between the units of a run, "
                    "pooled over the runs and over the plan's categories as the plan's pilot.pool says (max by "
                    "default), rounded up to three decimals; writes them into the plan with the runs, date and R "
                    "(a reviewed change of a frozen file: freeze-audit verify shows it) and re-renders "
                    "E2E-PLAN.md. Exit codes: 0 written; 2 bad input; 4 preflight not ready; 130 interrupted.")
    add_filter_args(p)
    add_sample_args(p)
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, metavar="R",
                   help=f"runs to drive (default {DEFAULT_REPEATS})")
    p.add_argument("--from-runs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="read these finished runs instead of driving new ones")
    p.add_argument("--jobs", type=int, default=1, help="turns of the target at the same time (default 1)")
    p.add_argument("--dry-run", action="store_true", help="print the estimates; leave the plan unchanged")
    p.add_argument("--output", type=Path, default=None, help="where to write E2E-PLAN.md (default: the bundle root)")
    add_config_args(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..loss.catalog import load_catalog
    from ..loss.pilot import pilot_from_runs

    config, cases = load(args)
    if config.catalog is None:
        raise ConfigError("no loss catalog: set run.catalog in the target configuration")
    plan_path = args.plan or config.plan
    if args.from_runs:
        run_dirs = list(args.from_runs)
    else:
        if args.repeats < 1:
            raise UsageError("--repeats must be at least 1")
        from ..run import headless

        filters, repeats, extra = sampled(args, cases, filters_from(args), config.plan)
        run_dirs = []
        for i in range(args.repeats):
            say(f"pilot run {i + 1} of {args.repeats}")
            code, out = headless.run(config, cases, headless.RunOptions(filters=filters, jobs=args.jobs,
                                                                        repeats=repeats, extra=extra, say=say))
            if "run_dir" not in out:
                result(out, args.json)
                return code
            run_dirs.append(Path(out["run_dir"]))
    out = pilot_from_runs(run_dirs, load_catalog(config.catalog), plan_path, write=not args.dry_run,
                          plan_md=args.output)
    result(out, args.json)
    for p in out["partitions"]:
        say(f"{p['partition']}: s {p['s_before']:g} → {p['s']:g}, n_min {p['n_min_before']} → {p['n_min']}")
    say(f"sample budget {out['sample_budget_before']} → {out['sample_budget']}"
        + ("" if args.dry_run else f"; wrote {out['plan']}"))
    return 0
