"""obai-e2e plan-loss: render E2E-PLAN.md and show n_min per partition and the sample budget."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit, say
from ..loss.catalog import load_catalog
from ..loss.plan import decimal_text, load_plan, write_plan_md
from ..loss.sampling import sample
from ._common import add_config_args, load


def register(sub) -> None:
    p = sub.add_parser(
        "plan-loss", help="render E2E-PLAN.md from the loss plan; print n_min per partition and the budget",
        description="n_min = ceil(16·s²/mde²), at least 2, computed exactly from the plan's decimals. Also shows "
                    "how many enabled cases of the case set fall into each partition (thin: fewer than n_min).")
    p.add_argument("--plan", type=Path, default=None,
                   help="loss plan (default: run.plan of the target, else cases/plan.yaml or $OBAI_E2E_PLAN)")
    p.add_argument("--output", type=Path, default=None, help="where to write E2E-PLAN.md (default: the bundle root)")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    config, cases = load(args)
    plan = load_plan(args.plan or config.plan)
    catalog = load_catalog(config.catalog) if config.catalog else None
    cap = catalog.cap_adversarial if catalog else None
    path = write_plan_md(plan, args.output, cap)
    drawn = {s.key: s for s in sample(plan, cases.cases).partitions}
    partitions = [{"partition": p.key, "labels": p.labels, "weight": p.weight, "s": float(p.s),
                   "s_from_pilot": p.s_from_pilot, "n_min": p.n_min, "available_cases": drawn[p.key].available,
                   "thin": drawn[p.key].thin} for p in plan.partitions]
    emit({"status": "planned", "plan": str(plan.path), "e2e_plan": str(path), "mde": plan.mde,
          "sample_budget": plan.budget, "adversarial_cap": float(cap) if cap is not None else None,
          "partitions": partitions})
    say(f"mde {decimal_text(plan.mde_exact)}: sample budget {plan.budget} units over {len(partitions)} partitions; "
        f"{sum(p['thin'] for p in partitions)} partition(s) have fewer cases than n_min; wrote {path}")
    return 0
