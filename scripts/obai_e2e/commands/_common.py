"""Arguments shared by several commands."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..cases import CaseSet, load_cases
from ..config import TargetConfig, load_target_config
from ..rundir import Filters


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


def filters_from(args) -> Filters:
    def split(values):
        return tuple(v.strip() for item in values for v in item.split(",") if v.strip())
    return Filters(smoke=bool(args.smoke), features=split(args.feature), ids=split(args.ids))


def load(args) -> tuple[TargetConfig, CaseSet]:
    if getattr(args, "target", None):
        os.environ["OBAI_E2E_TARGET"] = str(Path(args.target).resolve())
    config = load_target_config(args.target)
    v = config.vocabulary
    cases = load_cases(getattr(args, "cases", None), specialists=v.specialists,
                       strategy=v.strategy_specialist, options=v.options_specialist)
    return config, cases
