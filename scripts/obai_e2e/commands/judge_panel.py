"""obai-e2e judge-panel: the blind panel of a run, asked of the configured model judges in one command."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import Exit
from ..base.output import emit, say
from ..judge.models.config import load as load_judges
from ..judge.models.runner import brief, run_panel
from ._common import add_config_args, load_plan


def register(sub) -> None:
    p = sub.add_parser("judge-panel", help="ask the configured model judges for a run's blind panel (one command)",
                       description="Generates the run's judging round (or resumes the one these judges were "
                                   "asked already), sends each judge the bundle over HTTP or to its command, "
                                   "stores every reply through judge-response (validation, the one audited "
                                   "repair, write-once) and aggregates. Replies already stored are never paid for "
                                   "again; a judge that gives no answer, or the budget, leaves its questions "
                                   "undecided. Prints the round, the judges and their models, tokens, cost and "
                                   "agreement. Keys are read from the environment variables the panel file names. "
                                   "Exit 3 when a question the panel was asked was decided for none of its units "
                                   "(e.g. no judge answered).")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--judges-file", type=Path, default=None,
                   help="panel configuration (default: the run's copy of the panel file it was made with; for an older "
                        "run catalogs/judges.yaml, or $OBAI_E2E_JUDGES)")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    config, _, plan = load_plan(args)
    # The run's own copy of its panel file unless one is named (rundir/inputs.py).
    cfg = load_judges(args.judges_file or plan.meta.input_path(plan.run_dir, "judges"))
    out = brief(run_panel(args.run_dir, config, plan.units, cfg, say=say), cfg)
    emit(out)
    say(out["line"])
    return Exit.INCONCLUSIVE if out["left_undecided"] else Exit.OK
