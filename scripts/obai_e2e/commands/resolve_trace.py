"""obai-e2e resolve-trace: find the one trace of a turn."""
from __future__ import annotations

from ..base.clock import iso, utc_now
from ..base.errors import Exit
from ..base.output import emit
from ..config.target import load_target_config
from ..trace.backend import connect
from ..trace.resolve import RESOLVED, UNREACHABLE, TurnKey, resolve
from ._common import seconds


def register(sub) -> None:
    p = sub.add_parser("resolve-trace", help="find a turn's trace by tag, metadata, thread, or by time window and input",
                       description="Outcomes: resolved, trace_not_found, multi_match (candidates listed), "
                                   "opik_unreachable. Exit 0 when resolved, 10 for none or several, 9 when the "
                                   "backend does not answer.")
    p.add_argument("--tag", help="the correlation tag (or metadata value) the turn carried")
    p.add_argument("--session", help="the turn's session: its trace's thread_id (correlation match: thread)")
    p.add_argument("--query", default="", help="the turn's query (for the window match)")
    p.add_argument("--since", help="turn start (ISO 8601, UTC); default: 10 minutes ago")
    p.add_argument("--until", help="turn end (ISO 8601, UTC); default: now")
    p.add_argument("--deadline", type=seconds(3600), default=None, help="seconds to keep polling")
    p.add_argument("--target", default=None, help="target configuration file")
    p.set_defaults(func=run)


def run(args) -> int:
    config = load_target_config(args.target)
    backend = connect(config, start_local=False)
    now = utc_now()
    from datetime import timedelta

    key = TurnKey(query=args.query, tag=args.tag, session=args.session,
                  started_at=args.since or iso(now - timedelta(minutes=10)), ended_at=args.until or iso(now))
    res = resolve(backend, config, key, deadline_s=args.deadline)
    emit(res.to_json())
    if res.status == RESOLVED:
        return Exit.OK
    return Exit.BACKEND if res.status == UNREACHABLE else Exit.TRACE_UNRESOLVED
