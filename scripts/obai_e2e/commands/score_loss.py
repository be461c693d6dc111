"""obai-e2e score-loss: suite.json for a finished run; with a baseline, TOP-REGRESSIONS.md too."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import Exit
from ..base.output import result, say
from ..config.target import load_target_config
from ..loss.score_run import score_run
from ..rundir.inputs import frozen_config
from ..rundir.meta import RUN_FILE, load_run, plan_of
from ._common import add_json_arg


def register(sub) -> None:
    p = sub.add_parser(
        "score-loss", help="turn a finished run's results.json into suite.json (and compare with a baseline)",
        description="Writes RUN_DIR/suite.json once; with --baseline also RUN_DIR/TOP-REGRESSIONS.md and "
                    "RUN_DIR/comparison.json (the baseline is re-scored from its results.json with the current "
                    "catalog in mode B), and appends one row per run to LOSS-HISTORY.md in the runs folder. "
                    "Exit 0 when scored (also with findings, unless --fail-on-regression), 2 on bad input, "
                    "4 when a write-once file exists with different content.")
    p.add_argument("--run-dir", required=True, type=Path, help="a finished run (with results.json)")
    p.add_argument("--baseline", type=Path, default=None,
                   help="run directory or results.json to compare with (a suite.json only of the same catalog version)")
    p.add_argument("--catalog", type=Path, default=None,
                   help="loss catalog (default: the run's copy of it, else run.catalog of the target configuration)")
    p.add_argument("--plan", type=Path, default=None,
                   help="loss plan (default: the run's own, else run.plan of the target, else cases/plan.yaml or "
                        "$OBAI_E2E_PLAN)")
    p.add_argument("--target", type=Path, default=None,
                   help="target configuration (default: the run's own, else cases/target.yaml)")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when TOP-REGRESSIONS.md has a row")
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    meta = load_run(args.run_dir) if (args.run_dir / RUN_FILE).is_file() else None
    recorded = meta.target_config_path if meta and meta.target_config_path and meta.target_config_path.is_file() else None
    # The run's own copies of its target configuration, loss catalog and plan (rundir/inputs.py), unless named.
    config = (frozen_config(args.run_dir, meta.inputs) if meta and not args.target else None) \
        or load_target_config(args.target or recorded)
    plan = args.plan or (plan_of(args.run_dir) if meta else None) or config.plan
    out = score_run(args.run_dir, config=config, baseline=args.baseline, catalog_path=args.catalog, plan_path=plan)
    result(out, args.json)
    score = out["suite_score"]
    shown = f"{score:.4f}" if score is not None else ", ".join(
        f"{k} {v:.4f}" if v is not None else f"{k} —" for k, v in out["suite_scores"].items()) or "—"
    say(f"suite score {shown} ({out['suite_status']}); {out['findings']} finding(s) over "
        f"{out['compared_cells']} compared cell(s); {out['suite_json']}")
    return Exit.REGRESSION if (args.fail_on_regression and out["findings"]) else Exit.OK
