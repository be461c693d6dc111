"""report.md: the header, one table row per judged unit, detail blocks, and reading rows back.

Rows are appended, never rewritten, so a run's cost grows linearly with its cases. A
detail block ends the current table in Markdown, so the next row re-opens the table with
its header. Reading uses markdown-it-py's table parser, so a row is found by its ID cell,
never by a substring that might also occur in a query or a reason.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..base.fsutil import append_text, atomic_write_text, trim_torn_tail
from ..base.mdtable import inline, table_rows

COLUMNS = ["ID", "Feature", "Verdict", "Reason", "Trace", "Latency"]
TABLE_HEAD = "| " + " | ".join(COLUMNS) + " |\n" + "|" + "---|" * len(COLUMNS) + "\n"
QUERY_CHARS = 120
CHANGES_MARK = "<!-- what changed -->"
JUDGES_MARK = "<!-- judge panel -->"
NOT_ASKED_MARK = "<!-- judgment questions not asked -->"
INPUTS_MARK = "<!-- inputs -->"
NOT_ASKED_SHOWN = 50  # units listed by name; the rest are counted


def header(timestamp: str, disabled_line: str | None = None, title: str = "OBaI") -> str:
    text = f"# {inline(title)} E2E Regression — {timestamp}\n\n"
    if disabled_line:
        text += f"_{inline(disabled_line)}_\n\n"
    return text + TABLE_HEAD


def detail_block(unit_id: str, verdict: str, query: str, expected: str, observed: str, judgment: str) -> str:
    q = query if len(query) <= QUERY_CHARS else query[:QUERY_CHARS]
    return (
        "\n"
        f"**{inline(unit_id)} — {inline(verdict)}**\n"
        f"- query: {inline(q)}\n"
        f"- expected: {inline(expected)}\n"
        f"- observed: {inline(observed)}\n"
        f"- judgment: {inline(judgment)}\n"
        "\n"
    )


def _tail_is_table(path: Path) -> bool:
    """True when the file ends inside a table (so a row can follow directly)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 4096))
        tail = fh.read().decode("utf-8", errors="replace")
    if not tail.endswith("\n") or tail.endswith("\n\n"):
        return False
    return tail.rstrip("\n").split("\n")[-1].startswith("|")


def append_entry(path: Path, row_text: str, block: str | None) -> None:
    """Append one row (re-opening the table if a block closed it) and its block, in one write.

    No fsync: a row lost with the machine is appended again on resume (its verdict file is
    durable), and finishing a run fsyncs report.md once before results.json is written.
    """
    path = Path(path)
    trim_torn_tail(path)
    text = row_text if _tail_is_table(path) else "\n" + TABLE_HEAD + row_text
    if block:
        text += block
    append_text(path, text, durable=False, trimmed=True)


def read_rows(path: Path) -> list[dict[str, str]]:
    """Every row of every results table in report.md, as {column: text}."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # ignore a torn last line
    return table_rows(text, COLUMNS)


def judged_ids(path: Path) -> list[str]:
    return [r["ID"] for r in read_rows(path)]


def ensure_header(path: Path, timestamp: str, disabled_line: str | None, title: str = "OBaI") -> bool:
    """Write the header if the file does not exist; True when written."""
    path = Path(path)
    if path.exists():
        return False
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(header(timestamp, disabled_line, title))
        fh.flush()
        os.fsync(fh.fileno())
    return True


# The notes under the title, in the order a reader meets them: what changed first, then what
# was left undecided, then the judge panel. Each is written once, when the run finishes.
HEAD_ORDER = (CHANGES_MARK, NOT_ASKED_MARK, INPUTS_MARK, JUDGES_MARK)
_HEAD_END = re.compile(r"^(?:_|\| ID \| )", re.M)  # the disabled-cases line or the table's header
NOT_ASKED_HEADING = "Judgment questions not asked"


def _insert_head(path: Path, mark: str, block: str, tail: str = "") -> bool:
    """Put ``block`` (whose first line carries ``mark``) among the notes under the title, in HEAD_ORDER,
    and ``tail`` at the end of the file, in one atomic rewrite; False when the note is there already.

    report.md grows by appends while a run is driven; the notes are known only at the end, so the
    file is rewritten once per note.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if mark in text[:8192]:
        return False
    title, sep, rest = text.partition("\n\n")
    later = [rest.find(m) for m in HEAD_ORDER[HEAD_ORDER.index(mark) + 1:] if m in rest[:8192]]
    if later:
        at = rest.rfind("\n", 0, min(later)) + 1
    else:
        end = _HEAD_END.search(rest)
        at = end.start() if end else len(rest)
    body = rest[:at] + block + rest[at:]
    if tail:
        body = body.rstrip("\n") + "\n\n" + tail
    atomic_write_text(path, title + sep + body)
    return True


def insert_changes(path: Path, baseline_run_id: str | None, lines: list[str]) -> bool:
    """Put the "Changes since" block first under the title, once; True when written."""
    heading = f"## Changes since {inline(baseline_run_id)}" if baseline_run_id else "## Changes"
    return _insert_head(path, CHANGES_MARK, f"{heading} {CHANGES_MARK}\n\n" + "\n".join(lines) + "\n\n")


def insert_judges(path: Path, headline: str, details: list[str], *, warn: bool) -> bool:
    """Put the judge panel's note under the title, after the changes, once; True when written."""
    lead = f"> **Warning:** {inline(headline)}" if warn else f"> {inline(headline)}"
    return _insert_head(path, JUDGES_MARK,
                        f"{lead} {JUDGES_MARK}\n" + "".join(f"> - {inline(d)}\n" for d in details) + "\n")


def insert_not_asked(path: Path, questions: int, n_units: int, units: list[tuple[str, list[str]]]) -> bool:
    """Say on one line under the changes how many judgment questions no judge was asked, and list the
    units that have them (``units``: the first NOT_ASKED_SHOWN of the ``n_units``) in a section of
    their own at the end of the file, once; True when written."""
    if not questions:
        return False
    notice = (f"> **{questions} judgment question(s) not asked** in {n_units} unit(s): undecided, not passed; "
              f"listed under \"{NOT_ASKED_HEADING}\" below (`not_asked` in results.json). {NOT_ASKED_MARK}\n\n")
    shown = units[:NOT_ASKED_SHOWN]
    lines = [f"## {NOT_ASKED_HEADING}", "",
             "No panel and no judge decided these questions, so they are undecided, not passed.", ""]
    lines += [f"- {inline(uid)}: {inline(', '.join(qs))}" for uid, qs in shown]
    if n_units > len(shown):
        lines.append(f"- … {n_units - len(shown)} more units (results.json)")
    return _insert_head(path, NOT_ASKED_MARK, notice, "\n".join(lines) + "\n")


def insert_inputs(path: Path, lines: list[str]) -> bool:
    """Put what the run says of its inputs (an input changed while it ran; a run without copies) among the
    notes under the title, after the changes, once; True when written."""
    path = Path(path)
    if not lines or not path.exists():
        return False
    block = "".join(f"> **{inline(line)}** {INPUTS_MARK}\n" if i == 0 else f"> {inline(line)}\n"
                    for i, line in enumerate(lines))
    return _insert_head(path, INPUTS_MARK, block + "\n")
