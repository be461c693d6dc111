"""obai-e2e run-one: drive one case and write its packet."""
from __future__ import annotations

import sys
from pathlib import Path

from ._common import add_config_args, load_plan


def register(sub) -> None:
    p = sub.add_parser("run-one", help="drive one case through the target and store its packet",
                       description="Writes <run-dir>/<ID>.json atomically and prints it. If it exists, only "
                                   "prints it (the target is not run again).")
    p.add_argument("--id", required=True, help="case id (S1.r2 for the second repeat of a stochastic case)")
    p.add_argument("--run-dir", required=True, type=Path)
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..config.units import check_unit_id
    from ..drive.packet import drive
    from ..drive.packet_record import packet_path
    from ..drive.sandbox import install_signal_teardown
    from ..rundir.inputs import require_secrets
    from ..rundir.lock import RunLock
    from ..rundir.meta import load_run

    check_unit_id(args.id)
    load_run(args.run_dir)
    path = packet_path(args.run_dir, args.id)
    if path.exists():
        sys.stdout.write(path.read_text(encoding="utf-8"))
        return 0
    config, _, plan = load_plan(args)
    unit = plan.unit(args.id)
    require_secrets(plan.run_dir, plan.meta.inputs)  # a copy without its secrets drives no turn
    install_signal_teardown()
    with RunLock(args.run_dir, timeout_s=30):
        drive(config, args.run_dir, plan.meta, unit)
    sys.stdout.write(path.read_text(encoding="utf-8"))
    return 0
