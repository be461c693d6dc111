"""obai-e2e resolve-trace: find the one trace of a turn."""
from __future__ import annotations

from ..trace.backend import connect
from ..base.clock import iso, utc_now
from ..config.target import load_target_config
from ..base.output import emit
from ..trace.resolve import RESOLVED, TurnKey, resolve


def register(sub) -> None:
    p = sub.add_parser("resolve-trace", help="find a turn's trace by tag, or by time window and input",
                       description="Outcomes: resolved, trace_not_found, multi_match (candidates listed), "
                                   "opik_unreachable. Exit 0 only when resolved.")
    p.add_argument("--tag", help="the correlation tag the turn carried")
    p.add_argument("--query", default="", help="the turn's query (for the window match)")
    p.add_argument("--since", help="turn start (ISO 8601, UTC); default: 10 minutes ago")
    p.add_argument("--until", help="turn end (ISO 8601, UTC); default: now")
    p.add_argument("--deadline", type=float, default=None, help="seconds to keep polling")
    p.add_argument("--target", default=None, help="target configuration file")
    p.set_defaults(func=run)


def run(args) -> int:
    config = load_target_config(args.target)
    backend = connect(config, start_local=False)
    now = utc_now()
    from datetime import timedelta

    key = TurnKey(query=args.query, tag=args.tag,
                  started_at=args.since or iso(now - timedelta(minutes=10)), ended_at=args.until or iso(now))
    res = resolve(backend, config, key, deadline_s=args.deadline)
    emit(res.to_json())
    return 0 if res.status == RESOLVED else 3
