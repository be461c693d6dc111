"""obai-e2e check-case: the mechanical rubric for one unit."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import UsageError
from ..base.output import emit
from ._common import add_config_args, load_plan


def register(sub) -> None:
    p = sub.add_parser("check-case", help="apply the three-layer rubric to a unit's packet",
                       description="Prints every rule's outcome with evidence, the verdict they imply, the "
                                   "questions left to the judge and the codes a verdict for this case admits.")
    p.add_argument("--id", required=True)
    p.add_argument("--run-dir", required=True, type=Path)
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..drive.packet_record import load_packet
    from ..judge.panel.aggregate import panel_for_unit
    from ..judge.rubric import check_packet
    from ..judge.verdict import applicable_codes, readable

    config, _, plan = load_plan(args)
    unit = plan.unit(args.id)
    packet = load_packet(args.run_dir, unit.id)
    if packet is None:
        raise UsageError(f"no packet for {unit.id} in {args.run_dir}: run run_one.py --id {unit.id} first")
    result = check_packet(packet, unit.case, config).to_json()
    hard, soft = applicable_codes(unit.case, config, unit.channel)
    result["judge_panel"] = panel_for_unit(args.run_dir, unit.id)
    result["admissible"] = {"fail": [readable([p]) for p in hard], "needs_review": [readable([p]) for p in soft]}
    emit(result)
    return 0
