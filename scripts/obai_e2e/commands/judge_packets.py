"""obai-e2e judge-packets: write a round of blind judge packets and the judge bundle."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit_compact
from ..judge.panel.handover import hand_over
from ..judge.panel.packets import DEFAULT_PANEL, generate
from ..judge.panel.rounds import judging_lock
from ._common import add_config_args, count, load_plan


def register(sub) -> None:
    p = sub.add_parser("judge-packets", help="write blind judge packets and bundle.md for a judging round",
                       description="Writes one anonymous packet per unit that needs a model's judgment "
                                   "(hub.incomplete_answer for every answered, non-rejection unit, hub.unfaithful_answer for "
                                   "every one with specialist payloads; model_judged "
                                   "catalog categories for at least --share of eligible units) under "
                                   "D/judging/<round>/packets/, with the fixed calibration items mixed in blind "
                                   "(the judges are graded on those only), the id map mapping.json (never for "
                                   "judges) and bundle.md, the complete text a fresh judge gets. A round is "
                                   "write-once: generating it again is refused; use a new round name.")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--round", default="r1", help="round name (default r1)")
    p.add_argument("--share", default="0.2",
                   help="share of eligible units that get each model_judged category question (0.2 to 1, default 0.2)")
    p.add_argument("--seed", default=None, help="seed of the category sample (default: the run id)")
    p.add_argument("--judges", type=count(1, 99), default=DEFAULT_PANEL, help=f"panel size (default {DEFAULT_PANEL})")
    p.add_argument("--catalog", type=Path, default=None,
                   help="loss catalog (default: the one target.yaml names, else catalogs/loss-catalog.v4.json)")
    p.add_argument("--calibration", type=Path, default=None,
                   help="the fixed calibration items (default catalogs/calibration.v1.json, written for the demo "
                        "target; another agent needs items written from its own data)")
    p.add_argument("--no-handover", action="store_true",
                   help="write no hand-over folders (by default each judge gets a folder of its own with the bundle "
                        "file, and `judges` prints the prompt that names it)")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    config, _, plan = load_plan(args)
    with judging_lock(args.run_dir):
        out = generate(args.run_dir, config, plan.units, round_name=args.round, share=args.share, seed=args.seed,
                       catalog_path=args.catalog, panel_size=args.judges, calibration_path=args.calibration)
        if not args.no_handover and out["packets"]:
            out["judges"] = hand_over(args.run_dir, args.round)
            out["next"] = (f"start {len(out['judges'])} fresh sub-agents at once, each with its prompt from `judges` as "
                           "its whole prompt; then aggregate-judges --collect")
    emit_compact(out)
    return 0
