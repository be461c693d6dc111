"""obai-e2e aggregate-judges: majority, agreement and rater variance of a round, written once."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit
from ..judge.panel.aggregate import aggregate_round
from ..judge.panel.rounds import judging_lock


def register(sub) -> None:
    p = sub.add_parser("aggregate-judges", help="combine a round's judge responses into aggregate.json",
                       description="Majority per question (a choice of more than half of the panel; otherwise "
                                   "abstain), percent agreement and Fleiss' kappa, per-judge figures and rater "
                                   "variance; per unit the choices, per-judge losses, evidence and rationales. "
                                   "Writes D/judging/<round>/aggregate.json once; afterwards the round takes no "
                                   "further response.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--round", required=True)
    p.add_argument("--allow-missing", action="store_true",
                   help="aggregate although fewer responses than the panel size are stored (missing = no vote)")
    p.set_defaults(func=run)


def run(args) -> int:
    with judging_lock(args.run_dir):
        emit(aggregate_round(args.run_dir, args.round, allow_missing=args.allow_missing))
    return 0
