"""obai-e2e render-report: report.html (and the run's trace pages) for a finished run, opened only on request."""
from __future__ import annotations

from pathlib import Path

from ..base.output import emit, say
from ..report.html import open_in_browser, write_report
from ..report.trace_pages import write_trace_pages


def register(sub) -> None:
    p = sub.add_parser("render-report", help="write report.html (self-contained, offline) for a finished run",
                       description="Builds RUN_DIR/report.html from results.json, report.md and the cases file "
                                   "(plus suite.json / TOP-REGRESSIONS.md when the loss layer wrote them), and "
                                   "the run's own trace pages (traces/<unit>.html) from the trace snapshots it kept. "
                                   "Prints {\"status\": \"rendered\", \"report_html\": ..., \"bytes\": ..., "
                                   "\"trace_pages\": <pages written>}. "
                                   "Re-rendering the same run gives the same bytes. Exit codes: 0 rendered; "
                                   "2 bad input (no run directory, no or invalid results.json).")
    p.add_argument("--run-dir", required=True, type=Path, help="a finished run directory (has results.json)")
    p.add_argument("--open", action="store_true",
                   help="open the report in the browser ($BROWSER, else the platform opener); off by default")
    p.set_defaults(func=run)


def run(args) -> int:
    # The pages first, as a finished run writes them: report.html links the pages that exist.
    pages = write_trace_pages(args.run_dir)["trace_pages"]
    out = write_report(args.run_dir)
    out["trace_pages"] = pages
    if args.open:
        out["opened"] = open_in_browser(Path(out["report_html"]))
        if not out["opened"]:
            say(f"could not open a browser; open {out['report_html']} yourself")
    emit(out)
    return 0
