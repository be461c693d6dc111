"""A short Markdown summary of a finished run for a pull request (``--summary-md``, ``$GITHUB_STEP_SUMMARY``).

Enters: the finished run directory. Leaves: the counts, what changed since the baseline
(new fails first, with their codes), the provable regressions of the loss layer, and where
the full report is. Every value from the run goes through the same escaping as report.md.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..base.errors import ObaiError
from ..base.mdtable import inline, row, tables
from .diff import DiffDigest, markdown_lines
from .diff_file import read_digest
from .results import not_asked_line, summary_line

TOP_ROWS = 10


def _read(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _digest(path: Path) -> DiffDigest | None:
    """diff.json read a unit at a time, as its digest (None when it is missing or unreadable)."""
    try:
        return read_digest(path)
    except (OSError, ObaiError):
        return None


def summary_markdown(run_dir: Path, report_link: str | None = None) -> str:
    run_dir = Path(run_dir)
    results = _read(run_dir / "results.json") or {}
    diff = _digest(run_dir / "diff.json")
    run_id = (results.get("run") or {}).get("run_id", run_dir.name)
    lines = [f"### E2E regression {inline(run_id)}: {summary_line(results.get('summary') or {})}", ""]
    if diff is not None:
        base = (diff.baseline or {}).get("run_id")
        lines.append(f"**Changes since {inline(base)}**" if base else "**Changes**")
        lines.append("")
        lines += markdown_lines(diff)
        lines.append("")
    unasked = not_asked_line(results.get("summary") or {})
    if unasked:
        lines += [f"_{inline(unasked)}_", ""]
    top = run_dir / "TOP-REGRESSIONS.md"
    if top.exists():
        found = tables(top.read_text(encoding="utf-8", errors="replace"))
        header, body = found[0] if found else ([], [])
        if body:
            keep = [i for i, h in enumerate(header) if h.strip().lower() not in ("citation", "log_zitat")]
            lines.append(f"**Provable regressions** ({len(body)}; each interval clears the mde)")
            lines.append("")
            lines.append(row([header[i] for i in keep]).rstrip("\n"))
            lines.append("|" + "---|" * len(keep))
            lines += [row([r[i] for i in keep]).rstrip("\n") for r in body[:TOP_ROWS]]
            if len(body) > TOP_ROWS:
                lines.append(f"\n… and {len(body) - TOP_ROWS} more in TOP-REGRESSIONS.md")
        else:
            lines.append("**Provable regressions**: none")
        lines.append("")
    html = run_dir / "report.html"
    where = report_link or str(html if html.exists() else run_dir / "report.md")  # --no-html writes no page
    lines.append(f"Report: {inline(where)}")
    return "\n".join(lines) + "\n"


def write_summaries(run_dir: Path, summary_md: Path | None, report_link: str | None = None) -> list[str]:
    """Append the summary to ``summary_md`` and to ``$GITHUB_STEP_SUMMARY`` (when set); the paths written.

    Appending, because a CI step summary file collects the text of several steps.
    """
    targets = [p for p in (summary_md, os.environ.get("GITHUB_STEP_SUMMARY")) if p]
    if not targets:
        return []
    text = summary_markdown(run_dir, report_link)
    written = []
    for path in dict.fromkeys(Path(p) for p in targets):
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
        written.append(str(path))
    return written
