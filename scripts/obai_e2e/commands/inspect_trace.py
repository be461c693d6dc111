"""obai-e2e inspect-trace: the curated text of one trace."""
from __future__ import annotations

import sys

from ..base.output import emit
from ..config.target import load_target_config
from ..trace import raw
from ..trace.backend import connect
from ..trace.curate import curate
from ..trace.resolve import fetch


def register(sub) -> None:
    p = sub.add_parser("inspect-trace", help="print the curated trace a judge reads",
                       description="Deterministic for a given trace: the same trace gives the same bytes. "
                                   "--raw prints the span tree as the backend has it instead, with what the "
                                   "vocabulary reads in each span.")
    p.add_argument("--trace-id", required=True)
    p.add_argument("--json", action="store_true", help="print the structured digest (or, with --raw, the tree) as JSON")
    p.add_argument("--raw", action="store_true", help="print the raw span tree (every span, input, output, metadata): "
                                                       "the document the configuration's pointers start at")
    p.add_argument("--target", default=None, help="target configuration file")
    p.set_defaults(func=run)


def run(args) -> int:
    config = load_target_config(args.target)
    backend = connect(config, start_local=False)
    fetched = fetch(backend, args.trace_id)
    if args.raw:
        tree = raw.tree(fetched.trace, fetched.spans, config.vocabulary)
        if args.json:
            emit(tree)
        else:
            sys.stdout.write(raw.render(tree))
        return 0
    curated = curate(fetched.trace, fetched.spans, config.vocabulary, complete=fetched.complete)
    if args.json:
        emit(curated.digest.to_json())
    else:
        sys.stdout.write(curated.text)
    return 0
