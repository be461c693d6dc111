"""Arguments shared by several commands, and loading what they name.

A command that works on an existing run directory uses the target configuration and the
cases file that run was created with (run.json), unless ``--target`` / ``--cases`` name
others; every file a command was given is used end to end, never a default behind its back.

Only argparse is imported up front: the rest is imported when a command runs, so that
``--help`` answers at once.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config.cases import CaseSet
    from ..config.selection import Filters
    from ..config.target import TargetConfig
    from ..run.plan import RunPlan


def count(low: int = 1, high: int = 1024):
    """An argparse type: a whole number in [low, high], refused with a clear message otherwise."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: use {low} to {high}")
        return value
    parse.__name__ = "count"
    return parse


def seconds(high: float = 86400.0):
    """An argparse type: a finite number of seconds in (0, high]."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or not 0 < value <= high:
            raise argparse.ArgumentTypeError(f"{text} is out of range: use more than 0 and at most {high:g} seconds")
        return value
    parse.__name__ = "seconds"
    return parse


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", type=Path, default=None,
                        help="target configuration (default: the run's own, else cases/target.yaml of the bundle "
                             "or $OBAI_E2E_TARGET)")
    parser.add_argument("--cases", type=Path, default=None,
                        help="cases file (default: the run's own, else cases/cases.yaml of the bundle or "
                             "$OBAI_E2E_CASES)")


def add_filter_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true", help="only cases marked smoke: true")
    parser.add_argument("--feature", action="append", default=[], metavar="F",
                        help="only cases of this feature (repeatable, or comma-separated)")
    parser.add_argument("--id", action="append", default=[], metavar="ID", dest="ids",
                        help="only these case ids (repeatable, or comma-separated); names disabled cases too")
    parser.add_argument("--channel", action="append", default=[], metavar="CH", dest="channels",
                        help="only units on this channel: cli or ui (repeatable, or comma-separated; default: "
                             "every channel a case lists)")


def add_json_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the JSON document on stdout also in an interactive terminal (it is always "
                             "printed when stdout is a pipe or a file)")


def add_fail_on_arg(parser: argparse.ArgumentParser) -> None:
    from ..run.fail_on import parse

    parser.add_argument("--fail-on", type=parse, default=("fail",), metavar="WHAT",
                        help="what makes the exit code non-zero: fail (any unit failed: the default), new_fail (a "
                             "unit fails that did not fail in the baseline; without a baseline every failed unit "
                             "counts), regression (the loss layer lists a provable regression; without a baseline "
                             "comparison any failed unit counts), not_asked (a judgment question was put to no judge, e.g. a "
                             "run without a panel: exit 3); comma-separated for several")


def add_sample_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample", action="store_true",
                        help="select cases and repeats by the loss plan: up to n_min cases per partition, "
                             "stochastic cases at least 3 repeats (applied after the other filters)")
    parser.add_argument("--plan", type=Path, default=None,
                        help="loss plan, recorded in run.json and used to score the run (default: run.plan of the "
                             "target, else cases/plan.yaml)")


def sampled(args, case_set: CaseSet, filters: Filters, config_plan: Path | None = None) -> tuple[Filters, dict | None, dict | None]:
    """(filters, repeats, run.json extra) for a run planned by the loss plan, or unchanged.

    A plan named by --plan is recorded in run.json, so the run is scored by the same plan.
    """
    given = getattr(args, "plan", None)
    recorded = {}
    if given:
        from ..loss.plan import load_plan

        load_plan(given)  # a bad plan stops the run before its first turn, not when it is scored
        from ..base.paths import portable

        recorded["loss_plan"] = portable(given)
    if not getattr(args, "sample", False):
        return filters, None, recorded or None
    from ..config.selection import Filters
    from ..loss.plan import load_plan
    from ..loss.sampling import sample

    pool = filters.apply(case_set).cases
    s = sample(load_plan(given or config_plan), pool)
    if not s.units:
        from ..base.errors import UsageError

        raise UsageError("the loss plan selects no case from the filtered case set")
    ids = tuple(u["case_id"] for u in s.units)
    return (Filters(ids=ids, channels=filters.channels), {u["case_id"]: u["repeats"] for u in s.units},
            {**recorded, "sampling": s.to_json()})


def filters_from(args) -> Filters:
    from ..config.selection import Filters

    def split(values):
        return tuple(v.strip() for item in values for v in item.split(",") if v.strip())
    return Filters(smoke=bool(args.smoke), features=split(args.feature), ids=split(args.ids),
                   channels=split(getattr(args, "channels", [])))


def run_dir_of(args) -> Path | None:
    value = getattr(args, "run_dir", None) or getattr(args, "resume", None)
    return Path(value) if value else None


def _existing(path: Path | None) -> Path | None:
    return path if path is not None and path.exists() else None


def load(args) -> tuple[TargetConfig, CaseSet]:
    """The configuration and the case set the command was given; for an existing run the run's own: its copies
    of them (rundir/inputs.py), or for a run made before runs kept copies, the files run.json names."""
    from ..config.cases import load_cases_for
    from ..config.target import load_target_config
    from ..protocol.holdout import load_holdout_cases
    from ..rundir.inputs import frozen_config
    from ..rundir.meta import load_run

    run_dir = run_dir_of(args)
    meta = load_run(run_dir) if run_dir is not None else None
    given_target, given_cases = getattr(args, "target", None), getattr(args, "cases", None)
    config = frozen_config(run_dir, meta.inputs) if meta is not None and not given_target else None
    if config is None:
        config = load_target_config(given_target or (_existing(meta.target_config_path) if meta else None))
    cases_path = given_cases or ((meta.input_path(run_dir, "cases") or _existing(meta.cases_path)) if meta else None)
    if meta is not None and meta.holdout:
        return config, load_holdout_cases(config, run_dir, cases_path or meta.cases_path)
    return config, load_cases_for(config, cases_path)


def load_plan(args) -> tuple[TargetConfig, CaseSet, RunPlan]:
    """Configuration, case set and the plan of the run directory named by ``--run-dir``."""
    from ..run.plan import plan

    config, cases = load(args)
    return config, cases, plan(run_dir_of(args), cases)
