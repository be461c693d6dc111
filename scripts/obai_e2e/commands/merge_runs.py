"""obai-e2e merge-runs: the shards of a run, merged into one finished run."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import MergeRefused
from ..base.output import result, say
from ..base.seal_key import seal_key
from ..config.cases import load_cases_for
from ..config.target import load_target_config
from ..report.ci_summary import write_summaries
from ..run.fail_on import decide
from ..run.finish import finish
from ..run.merge import load_parts, merge
from ..run.plan import plan
from ..rundir.inputs import frozen_config
from ._common import add_fail_on_arg, add_json_arg


def register(sub) -> None:
    p = sub.add_parser("merge-runs", help="merge the shards of a run (run --shard K/N) into one finished run",
                       description="Checks that the parts share plan, cases, target configuration, filters and git "
                                   "commit and cover the plan exactly once, then writes one run directory with "
                                   "report.md, results.json, JUnit, the loss layer, report.html and the seal. "
                                   "Each part must be a finished shard whose seal verifies; no symbolic link is "
                                   "followed, each record must be its file's unit and each verdict its mechanical "
                                   "outcome unless an override says why. With OBAI_E2E_SEAL_KEY set, each part's "
                                   "seal must also carry a valid signature made with that key (the shards' jobs "
                                   "set the same secret), and the merged seal is signed. Exit codes: 0 merged; 1 a unit failed (under "
                                   "--fail-on: what it names); 12 a provable regression (--fail-on regression); 3 "
                                   "inconclusive units; 2 a part was refused (the JSON's reason names the check, "
                                   "the message the part, unit or file).")
    p.add_argument("parts", nargs="+", type=Path, metavar="SHARD_RUN_DIR", help="run directory of each shard")
    p.add_argument("--into", type=Path, metavar="RUN_DIR",
                   help="the merged run directory (default: a new runs/<date>/<time>/)")
    p.add_argument("--baseline", type=Path, metavar="RESULTS_OR_RUN_DIR",
                   help="compare against this run directory or results.json; an empty directory means no "
                        "baseline (default: the newest comparable finished run, if any)")
    p.add_argument("--target", type=Path, default=None, help="target configuration (default: the shards' own copy; for "
                        "older shards the file found in this checkout by its recorded path and SHA-256)")
    p.add_argument("--cases", type=Path, default=None, help="cases file (default: the shards' own copy; for older shards the file found in this "
                        "checkout by its recorded path and SHA-256)")
    p.add_argument("--summary-md", type=Path, metavar="PATH",
                   help="append a short Markdown summary for a pull request here (also to $GITHUB_STEP_SUMMARY)")
    p.add_argument("--report-url", metavar="URL", help="where the report can be opened, for the summary")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    add_fail_on_arg(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    parts = load_parts(args.parts)
    first = parts[0].meta
    # The first part's own copies of its inputs (its seal verified), unless others are named; for parts made
    # before runs kept copies, the files they name, found in this checkout by path and SHA-256.
    config = (frozen_config(parts[0].run_dir, first.inputs) if not args.target else None) \
        or load_target_config(args.target or first.located("target_config", "--target"))
    cases = load_cases_for(config, args.cases or first.input_path(parts[0].run_dir, "cases")
                           or first.located("cases", "--cases"))
    try:
        into = merge(config, cases, parts, args.into)
    except OSError as exc:  # a file the checks did not reach (the target directory, a full disk)
        raise MergeRefused("io_error", f"{exc.filename or ''}: {exc.strerror or exc}") from None
    # The parts' seals (a name and a hash for every file of every part) are not needed to finish the merged
    # run: let them go before finishing it, which has a peak of its own.
    del parts, first
    out = finish(config, cases, plan(into, cases), html=not args.no_html, baseline=args.baseline)
    out["signatures"] = ("verified: every part's seal is signed with OBAI_E2E_SEAL_KEY" if seal_key() is not None
                         else "not checked: OBAI_E2E_SEAL_KEY is not set, so a part's seal shows changes, not who "
                              "made them")
    out["summaries"] = write_summaries(into, args.summary_md, args.report_url)
    decision = decide(out, args.fail_on)
    out["fail_on"] = {"modes": list(args.fail_on), **decision.to_json()}
    result({"run_dir": str(into), **out}, args.json)
    say(out["summary_line"])
    say(f"report.md: {out['report_md']}")
    if decision.code and decision.why:
        say(decision.why)
    if out.get("diff_line"):
        say(out["diff_line"])
    for line in out.get("inputs_lines") or []:
        say(line)
    return decision.code
