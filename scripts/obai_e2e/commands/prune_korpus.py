"""obai-e2e prune-korpus: remove korpus and mixed runs older than privacy.retention_days."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit, say
from ..config.target import load_target_config
from ..loss.retention import prune_korpus


def register(sub) -> None:
    p = sub.add_parser(
        "prune-korpus", help="delete korpus/mixed run directories older than the retention period",
        description="Reads privacy.retention_days from the target configuration and each run's provenance and "
                    "created_at from its run.json. Synthetic runs are never touched. Prints what was removed.")
    p.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    p.add_argument("--target", type=Path, default=None, help="target configuration (default: cases/target.yaml)")
    p.set_defaults(func=run)


def run(args) -> int:
    config = load_target_config(args.target)
    out = prune_korpus(config.privacy, dry_run=args.dry_run)
    emit(out)
    say(f"{'would remove' if args.dry_run else 'removed'} {out['count']} korpus run(s) older than "
        f"{out['retention_days']} days")
    return 0
