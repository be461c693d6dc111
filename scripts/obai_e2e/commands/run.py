"""obai-e2e run: the whole suite, headless, judged mechanically."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import UsageError
from ..base.output import emit, say
from ..run import headless
from ..run.finish import after_run
from ..run.shard import ShardSpec
from ._common import (
    add_config_args,
    add_filter_args,
    add_sample_args,
    filters_from,
    load,
    sampled,
)


def register(sub) -> None:
    p = sub.add_parser("run", help="run the suite headless: preflight, every case, judge, report",
                       description="Exit codes: 0 no fail and no inconclusive; 1 at least one fail; 3 no fail "
                                   "but inconclusive units; 4 preflight not ready; 2 bad input; 5 the run "
                                   "directory is locked by another runner; 130 interrupted.")
    add_filter_args(p)
    add_sample_args(p)
    p.add_argument("--jobs", type=int, default=1, help="units driven at the same time (default 1)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue an interrupted run directory")
    p.add_argument("--baseline", type=Path, metavar="RESULTS_OR_RUN_DIR",
                   help="compare against this run (default: the previous runs/latest, when there is one)")
    p.add_argument("--panel-command", metavar="CMD",
                   help="a judge program (bundle on stdin, JSON answer on stdout) run once per judge for a blind "
                        "panel on the model-judged questions before verdicts are recorded")
    p.add_argument("--panel-judges", type=int, default=3, help="judges in the panel (default 3, at least 3)")
    p.add_argument("--shard", metavar="K/N", type=ShardSpec.parse,
                   help="drive only part K of N of the planned units (CI runners; merge the parts with merge-runs)")
    p.add_argument("--shard-timings", type=Path, metavar="RESULTS_OR_RUN_DIR",
                   help="balance the shards by this earlier run's latencies (every shard must be given the same)")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--open", action="store_true", help="open report.html in the browser at the end")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    config, cases = load(args)
    if args.shard_timings and not args.shard:
        raise UsageError("--shard-timings needs --shard K/N")
    hook = after_run(config, cases, html=not args.no_html, open_browser=args.open, baseline=args.baseline,
                     loss=args.shard is None)
    filters, repeats, extra = sampled(args, cases, filters_from(args), config.plan)
    code, out = headless.run(config, cases, filters, jobs=args.jobs, resume=args.resume, repeats=repeats, extra=extra,
                             after_finish=hook, say=say, panel_command=args.panel_command,
                             panel_judges=args.panel_judges, shard=args.shard, shard_timings=args.shard_timings)
    emit(out)
    if "summary_line" in out:
        say(out["summary_line"])
        say(f"report.md: {out['report_md']}")
        if Path(out["report_html"]).exists():
            say(f"report.html: {out['report_html']}")
    elif out.get("reason"):
        say(f"not ready: {out['reason']}")
        if out.get("next_step"):
            say(f"next step: {out['next_step']}")
    return code
