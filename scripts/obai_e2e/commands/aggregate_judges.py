"""obai-e2e aggregate-judges: majority, agreement and rater variance of a round, written once."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import UsageError
from ..base.output import emit, emit_compact
from ..judge.panel.aggregate import aggregate_round
from ..judge.panel.handover import collect
from ..judge.panel.rounds import judging_lock


def register(sub) -> None:
    p = sub.add_parser("aggregate-judges", help="combine a round's judge responses into aggregate.json",
                       description="Majority per question (a choice of more than half of the panel; otherwise "
                                   "abstain), percent agreement and Fleiss' kappa, per-judge figures and rater "
                                   "variance; per unit the choices, per-judge losses, evidence and rationales; "
                                   "the judges graded on the round's fixed calibration items (calibration: "
                                   "worst per-choice recall and balanced accuracy per judge and for the "
                                   "majority, with n), and the live units against their cases' expected_judgment "
                                   "(expectations: where a majority went against one, the unit's regression). "
                                   "Writes D/judging/<round>/aggregate.json once; afterwards the round takes no "
                                   "further response.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--round", required=True)
    p.add_argument("--allow-missing", action="store_true",
                   help="aggregate although fewer responses than the panel size are stored (missing = no vote)")
    p.add_argument("--collect", action="store_true",
                   help="first store the reply each judge wrote into its hand-over folder (as judge-response does; "
                        "needs --model)")
    p.add_argument("--model", help="with --collect: the model that answered")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.collect and not args.model:
        raise UsageError("--collect stores the judges' replies: name the model that answered with --model")
    with judging_lock(args.run_dir):
        collected = collect(args.run_dir, args.round, args.model) if args.collect else None
        out = aggregate_round(args.run_dir, args.round, allow_missing=args.allow_missing)
    if collected is None:
        emit(out)
    else:
        emit_compact({**out, "collected": {j: _brief(r) for j, r in collected.items()}})
    return 0


def _brief(stored: dict) -> dict:
    keep = ("status", "parse_ok", "parse_error", "valid", "repaired", "refused", "absent", "refusals", "expected_at", "error")
    return {k: stored[k] for k in keep if stored.get(k) not in (None, {}, [])}
