"""report.md: the header, one table row per judged unit, detail blocks, and reading rows back.

Rows are appended, never rewritten, so a run's cost grows linearly with its cases. A
detail block ends the current table in Markdown, so the next row re-opens the table with
its header. Reading uses markdown-it-py's table parser, so a row is found by its ID cell,
never by a substring that might also occur in a query or a reason.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from ..base.fsutil import append_text, replace_from, trim_torn_tail
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
    return list(iter_rows(path))


def iter_rows(path: Path) -> Iterator[dict[str, str]]:
    """The rows of report.md's results tables in file order, parsed a slice of the file at a time.

    The file is read line by line and cut at blank lines (Markdown blocks never span one in
    a file the harness writes); a table of ours is parsed in slices of ``SLICE_ROWS`` rows,
    each under the table's header, so that memory does not grow with the table. A block
    that is not such a table is parsed whole, and so is the rest of a file once a line
    could open a code fence or an HTML block (only an edited file has one: every cell and
    note is escaped). A torn last line (no newline) is left out.
    """
    path = Path(path)
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        block: list[str] = []
        for line in fh:
            if not line.endswith("\n"):
                break  # torn by a kill during an append
            if _OPENS_RAW.match(line):
                yield from _rows_of_text("".join(block) + line + "".join(l for l in fh if l.endswith("\n")))
                return
            if line.strip():
                block.append(line)
                continue
            yield from _rows_of_block(block)
            block = []
        yield from _rows_of_block(block)


SLICE_ROWS = 512
_OPENS_RAW = re.compile(r"^ {0,3}(?:```|~~~|<)")
_HEAD_LINE, _RULE_LINE = TABLE_HEAD.splitlines(keepends=True)


def _rows_of_text(text: str) -> list[dict[str, str]]:
    return table_rows(text, COLUMNS) if text else []


def _rows_of_block(lines: list[str]) -> Iterator[dict[str, str]]:
    """The rows of one blank-line separated block: our table in slices, anything else whole."""
    if len(lines) <= SLICE_ROWS + 2 or lines[0] != _HEAD_LINE or lines[1] != _RULE_LINE:
        yield from _rows_of_text("".join(lines))
        return
    at = 2
    while at < len(lines):
        part = lines[at:at + SLICE_ROWS]
        rows = _rows_of_text(_HEAD_LINE + _RULE_LINE + "".join(part))
        yield from rows
        if len(rows) < len(part):  # the table ended inside the slice: the rest is read as Markdown reads it
            yield from _rows_of_text("".join(lines[at + len(rows):]))
            return
        at += len(part)


def judged_ids(path: Path) -> list[str]:
    return [r["ID"] for r in iter_rows(path)]


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
HEAD_BYTES = 1 << 16  # the part of report.md its head notes are read from and written into


def rewrite_head(path: Path, edit: Callable[[str], str | None], tail: str = "") -> bool:
    """Replace the beginning of report.md with ``edit`` of it, copy the rest (the table) as it is, append
    ``tail``, all in one atomic replace; False when ``edit`` returns None (the file is left alone).

    ``edit`` gets the first ``HEAD_BYTES`` of the file up to a line end (the whole file when it is
    shorter, or when that part has no blank line to end the title), so memory does not grow with
    the table: the head notes are known only when a run finishes, after every row was appended.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        raw = fh.read(HEAD_BYTES)
        if fh.read(1):
            cut = raw.rfind(b"\n") + 1
            raw = raw[:cut] if cut and b"\n\n" in raw[:cut] else path.read_bytes()
    new = edit(raw.decode("utf-8"))
    if new is None:
        return False

    def write(out: BinaryIO) -> None:
        out.write(new.encode("utf-8"))
        with open(path, "rb") as src:
            src.seek(len(raw))
            shutil.copyfileobj(src, out, 1 << 20)
        out.write(tail.encode("utf-8"))
    replace_from(path, write)
    return True


def _insert_head(path: Path, mark: str, block: str, tail: str = "") -> bool:
    """Put ``block`` (whose first line carries ``mark``) among the notes under the title, in HEAD_ORDER,
    and ``tail`` at the end of the file, in one atomic rewrite; False when the note is there already.

    report.md grows by appends while a run is driven; the notes are known only at the end, so the
    file is rewritten once per note.
    """
    path = Path(path)
    if tail:  # one blank line between the table and the tail
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 2))
            last = fh.read()
        tail = "\n" * (2 - (len(last) - len(last.rstrip(b"\n")))) + tail

    def edit(text: str) -> str | None:
        if mark in text[:8192]:
            return None
        title, sep, rest = text.partition("\n\n")
        later = [rest.find(m) for m in HEAD_ORDER[HEAD_ORDER.index(mark) + 1:] if m in rest[:8192]]
        if later:
            at = rest.rfind("\n", 0, min(later)) + 1
        else:
            end = _HEAD_END.search(rest)
            at = end.start() if end else len(rest)
        return title + sep + rest[:at] + block + rest[at:]
    return rewrite_head(path, edit, tail)


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
