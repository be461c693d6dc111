"""Arguments shared by several commands."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..config.cases import CaseSet, load_cases
from ..config.target import TargetConfig, load_target_config
from ..rundir.layout import Filters


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", type=Path, default=None,
                        help="target configuration (default: cases/target.yaml of the bundle, or $OBAI_E2E_TARGET)")
    parser.add_argument("--cases", type=Path, default=None,
                        help="cases file (default: cases/cases.yaml of the bundle, or $OBAI_E2E_CASES)")


def add_filter_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true", help="only cases marked smoke: true")
    parser.add_argument("--feature", action="append", default=[], metavar="F",
                        help="only cases of this feature (repeatable, or comma-separated)")
    parser.add_argument("--id", action="append", default=[], metavar="ID", dest="ids",
                        help="only these case ids (repeatable, or comma-separated); names disabled cases too")


def add_sample_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample", action="store_true",
                        help="select cases and repeats by the loss plan: up to n_min cases per partition, "
                             "stochastic cases at least 3 repeats (applied after the other filters)")
    parser.add_argument("--plan", type=Path, default=None, help="loss plan (default: cases/plan.yaml)")


def sampled(args, case_set, filters: Filters) -> tuple[Filters, dict | None, dict | None]:
    """(filters, repeats, run.json extra) for a run planned by the loss plan, or unchanged."""
    if not getattr(args, "sample", False):
        return filters, None, None
    from ..loss.plan import load_plan
    from ..loss.sampling import sample

    pool = filters.apply(case_set).cases
    s = sample(load_plan(args.plan), pool)
    if not s.units:
        from ..base.errors import UsageError

        raise UsageError("the loss plan selects no case from the filtered case set")
    ids = tuple(u["case_id"] for u in s.units)
    return Filters(ids=ids), {u["case_id"]: u["repeats"] for u in s.units}, {"sampling": s.to_json()}


def filters_from(args) -> Filters:
    def split(values):
        return tuple(v.strip() for item in values for v in item.split(",") if v.strip())
    return Filters(smoke=bool(args.smoke), features=split(args.feature), ids=split(args.ids))


def load(args) -> tuple[TargetConfig, CaseSet]:
    """The configuration and the case set; for an existing run, the case set that run uses."""
    if getattr(args, "target", None):
        os.environ["OBAI_E2E_TARGET"] = str(Path(args.target).resolve())
    config = load_target_config(args.target)
    v = config.vocabulary
    run_dir = getattr(args, "run_dir", None) or getattr(args, "resume", None)
    cases_path = getattr(args, "cases", None)
    if cases_path is None and run_dir is not None:
        cases_path = run_cases_file(Path(run_dir))
    cases = load_cases(cases_path, specialists=v.specialists, strategy=v.strategy_specialist,
                       options=v.options_specialist, run_dir=Path(run_dir) if run_dir else None)
    return config, cases


def run_cases_file(run_dir: Path) -> Path | None:
    """The cases file a run was created with, when it still exists."""
    meta_path = run_dir / "run.json"
    if not meta_path.exists():
        return None
    try:
        recorded = json.loads(meta_path.read_text(encoding="utf-8")).get("cases_file")
    except json.JSONDecodeError:
        return None
    return Path(recorded) if recorded and Path(recorded).exists() else None
