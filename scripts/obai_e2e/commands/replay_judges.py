"""obai-e2e replay-judges: re-validate stored judge responses offline and recompute the aggregate."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import FrozenArtifactChanged
from ..base.output import emit
from ..judge.panel.replay import replay


def register(sub) -> None:
    p = sub.add_parser("replay-judges", help="offline replay of a round's judge responses (no model call)",
                       description="Re-validates every stored raw response against its original packet and "
                                   "recomputes the aggregation; writes D/judging/<round>/replay-report.json. "
                                   f"Exits {FrozenArtifactChanged.exit_code} when anything differs (a packet, "
                                   "the bundle, a raw text, a validation or aggregate.json).")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--round", default=None, help="one round (default: every generated round)")
    p.set_defaults(func=run)


def run(args) -> int:
    # No lock: replay only reads, and writes its own report atomically (it also runs on sealed runs).
    result = replay(args.run_dir, args.round)
    emit(result)
    return FrozenArtifactChanged.exit_code if result["status"] == "mismatch" else 0
