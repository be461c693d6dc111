"""obai-e2e run: the whole suite, headless, judged mechanically."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..base.errors import Interrupted, UsageError
from ..base.output import result, say
from ..judge.models.config import load as load_judges
from ..report.ci_summary import write_summaries
from ..run import fail_on, headless
from ..run.finish import after_run
from ..run.resume import STARTED_BY, unfinished_run
from ..run.shard import ShardSpec
from ._common import (
    add_config_args,
    add_fail_on_arg,
    add_filter_args,
    add_json_arg,
    add_sample_args,
    count,
    filters_from,
    load,
    sampled,
)


def register(sub) -> None:
    p = sub.add_parser("run", help="run the suite headless: preflight, every case, judge, report",
                       description="Exit codes: 0 no fail and no inconclusive; 1 at least one fail (under --fail-on: "
                                   "what it names); 12 a provable regression (--fail-on regression); 3 no fail "
                                   "but inconclusive units, or a question the judge panel was asked that it decided "
                                   "for none of its units (e.g. no judge answered); 4 preflight not ready; 2 bad "
                                   "input; 5 the run directory is locked by another runner; 130 interrupted "
                                   "(SIGINT or SIGTERM: the units in flight stay pending, and the command that "
                                   "resumes the run is printed). Run again with the same selection, it resumes the "
                                   "unfinished run that selection left (--fresh starts a new one).")
    add_filter_args(p)
    add_sample_args(p)
    p.add_argument("--jobs", type=count(1, 256), default=1,
                   help="turns of the target running at the same time (1-256, default 1); a finished "
                        "turn's trace is read and checked while the next turn runs")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue an interrupted run directory")
    p.add_argument("--fresh", action="store_true",
                   help="start a new run even when an unfinished one of the same selection exists (by default "
                        "that one is resumed)")
    p.add_argument("--baseline", type=Path, metavar="RESULTS_OR_RUN_DIR",
                   help="compare against this run directory or results.json; an empty directory (a CI restore that "
                        "found nothing) means no baseline (default: the previous finished run of the same cases and "
                        "filters, when there is one)")
    panel = p.add_mutually_exclusive_group()
    panel.add_argument("--judges", action="store_true",
                       help="ask the configured model judges (catalogs/judges.yaml, or --judges-file) for a blind "
                            "panel on the model-judged questions before verdicts are recorded")
    panel.add_argument("--no-judges", action="store_true",
                       help="no panel: model-judged questions stay undecided (the default)")
    panel.add_argument("--panel-command", metavar="CMD",
                       help="a judge program (bundle on stdin, JSON answer on stdout) run once per judge for a "
                            "blind panel, instead of the configured judges")
    p.add_argument("--judges-file", type=Path, metavar="YAML",
                   help="the judge panel configuration (default: catalogs/judges.yaml, or $OBAI_E2E_JUDGES); "
                        "implies --judges")
    p.add_argument("--panel-judges", type=count(3, 99), default=3, help="judges in a --panel-command panel (default 3, at least 3)")
    p.add_argument("--shard", metavar="K/N", type=ShardSpec.parse,
                   help="drive only part K of N of the planned units (CI runners; merge the parts with merge-runs)")
    p.add_argument("--shard-timings", type=Path, metavar="RESULTS_OR_RUN_DIR",
                   help="balance the shards by this earlier run's latencies (every shard must be given the same)")
    add_fail_on_arg(p)
    p.add_argument("--summary-md", type=Path, metavar="PATH",
                   help="append a short Markdown summary for a pull request here (also written to "
                        "$GITHUB_STEP_SUMMARY when that is set)")
    p.add_argument("--report-url", metavar="URL", help="where the report can be opened, for the summary (e.g. a CI "
                                                        "artifact link)")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--open", action="store_true", help="open report.html in the browser at the end")
    add_config_args(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.judges_file and (args.no_judges or args.panel_command):
        raise UsageError("--judges-file names the configured panel; it does not go with --no-judges or --panel-command")
    judges = load_judges(args.judges_file) if (args.judges or args.judges_file) else None
    config, cases = load(args)
    if args.shard_timings and not args.shard:
        raise UsageError("--shard-timings needs --shard K/N")
    if args.resume and args.fresh:
        raise UsageError("--fresh starts a new run; it does not go with --resume")
    hook = after_run(config, cases, html=not args.no_html, open_browser=args.open, baseline=args.baseline,
                     loss=args.shard is None)
    filters, repeats, extra = sampled(args, cases, filters_from(args), config.plan)
    extra = {**(extra or {}), "started_by": STARTED_BY}
    resume = args.resume
    if resume is None and not args.fresh:
        resume = unfinished_run(config, cases, filters, repeats=repeats, shard=args.shard,
                                shard_timings=args.shard_timings, extra=extra)
        if resume is not None:
            say(f"resuming {resume}, the unfinished run of this selection ({_judged(resume)}); --fresh starts a "
                "new run instead")
    where: list[Path] = [resume] if resume else []
    try:
        code, out = headless.run(config, cases, headless.RunOptions(
            filters=filters, jobs=args.jobs, resume=resume, repeats=repeats, extra=extra, after_finish=hook, say=say,
            panel_command=args.panel_command, panel_judges=args.panel_judges, judges=judges, shard=args.shard,
            shard_timings=args.shard_timings, baseline=args.baseline, on_run_dir=where.append))
        decision = None
        if "summary" in out:
            part = f"{args.shard.index}/{args.shard.total}" if args.shard else None
            decision = fail_on.decide(out, args.fail_on, shard=part)
            code, out["fail_on"] = decision.code, {"modes": list(args.fail_on), **decision.to_json()}
            out["summaries"] = write_summaries(Path(out["run_dir"]), args.summary_md, args.report_url)
    except (KeyboardInterrupt, Interrupted):
        raise _stopped(args, where[-1] if where else None) from None
    result(out, args.json)
    if "summary_line" in out:
        say(out["summary_line"])
        if out.get("not_asked_line"):
            say(out["not_asked_line"])
        if out.get("judges"):
            say(out["judges"]["line"])
        say(f"report.md: {out['report_md']}")
        if Path(out["report_html"]).exists():
            say(f"report.html: {out['report_html']}")
        if decision.code and decision.why:
            say(decision.why)
        if out.get("diff_line"):
            say(out["diff_line"])
        for line in out.get("inputs_lines") or []:
            say(line)
    elif out.get("reason"):
        say(f"not ready: {out['reason']}")
        if out.get("next_step"):
            say(f"next step: {out['next_step']}")
    return code



def _judged(run_dir: Path) -> str:
    from ..rundir.meta import load_run

    total = len(load_run(run_dir).units)
    done = sum(1 for _ in Path(run_dir).glob("*.verdict.json"))
    return f"{done} of {total} units judged"


# Options that ride along to the resumed run as they were given (the selection is the run's own).
_CARRIED = (("jobs", "--jobs", 1), ("target", "--target", None), ("cases", "--cases", None),
            ("baseline", "--baseline", None), ("judges_file", "--judges-file", None),
            ("panel_command", "--panel-command", None), ("panel_judges", "--panel-judges", 3),
            ("summary_md", "--summary-md", None), ("report_url", "--report-url", None))
_FLAGS = (("judges", "--judges"), ("no_judges", "--no-judges"), ("no_html", "--no-html"), ("open", "--open"))


def resume_command(args, run_dir: Path) -> str:
    """The command that resumes ``run_dir`` with the options this one was given."""
    script = Path(sys.argv[0]).name
    words = ["python3", sys.argv[0]] if script.endswith(".py") and script != "__main__.py" else ["obai-e2e", "run"]
    words += ["--resume", str(run_dir)]
    for name, option, default in _CARRIED:
        value = getattr(args, name, default)
        if value != default:
            words += [option, str(value)]
    words += [option for name, option in _FLAGS if getattr(args, name, False)]
    if tuple(args.fail_on) != ("fail",):
        words += ["--fail-on", ",".join(args.fail_on)]
    return shlex.join(words)


def _stopped(args, run_dir: Path | None) -> Interrupted:
    if run_dir is None:
        return Interrupted("interrupted before a run directory was made: nothing to resume; run the same "
                           "command again")
    command = resume_command(args, run_dir)
    return Interrupted(f"interrupted: {_judged(run_dir)} in {run_dir}; the units in flight stay pending. "
                       f"Resume with: {command} (or run the same command again)", resume_command=command,
                       run_dir=str(run_dir))
