"""The first lines of report.md: "Changes since <baseline>" first, whatever order the notes were written in;
the count of judgment questions not asked on one line after it; the units that have them in a section
of their own below the table. Read back with markdown-it-py, as a reader's viewer parses the file."""
from __future__ import annotations

from itertools import permutations

import pytest
from markdown_it import MarkdownIt
from obai_e2e.report.report_md import (
    append_entry,
    ensure_header,
    insert_changes,
    insert_judges,
    insert_not_asked,
    read_rows,
)

ROW = "| {id} | quotes | pass |  | t-{id} | 1200 ms |\n"
UNASKED = [("MD1", ["hub.incomplete_answer"]), ("F1", ["hub.incomplete_answer", "hub.unfaithful_answer"])]


def report(tmp_path, disabled: str | None = None):
    path = tmp_path / "report.md"
    ensure_header(path, "2026-01-01T00:00:00Z", disabled)
    for uid in ("MD1", "F1", "R1"):
        append_entry(path, ROW.format(id=uid), None)
    return path


NOTES = {
    "changes": lambda p: insert_changes(p, "2025-12-31/101010", ["- **1 new_fail**: MD1 (routing.skill_overload)"]),
    "judges": lambda p: insert_judges(p, "2 of 3 judges answered", ["J3: refused"], warn=True),
    "not_asked": lambda p: insert_not_asked(p, 3, 2, UNASKED),
}


def blocks(path) -> list[tuple[str, str]]:
    """(kind, first line of text) of each top-level block, in reading order."""
    tokens = MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))
    out, depth = [], 0
    for i, t in enumerate(tokens):
        if t.nesting == 1 and depth == 0:
            inline = next((x.content for x in tokens[i:] if x.type == "inline"), "")
            out.append((t.type, inline.splitlines()[0] if inline else ""))
        depth += t.nesting
    return out


@pytest.mark.parametrize("order", list(permutations(NOTES)), ids="-".join)
def test_the_changes_come_first_whatever_order_the_notes_are_written_in(tmp_path, order):
    path = report(tmp_path, "skipped 1 disabled case: D1")
    for name in order:
        assert NOTES[name](path) is True
    got = blocks(path)
    kinds = [k for k, _ in got]
    assert got[0][1].startswith("OBaI E2E Regression")
    assert got[1] == ("heading_open", "Changes since 2025-12-31/101010 <!-- what changed -->")
    assert got[2][0] == "bullet_list_open"
    notice = got[3]
    assert notice[0] == "blockquote_open" and notice[1].startswith("**3 judgment question(s) not asked** in 2 unit(s)")
    assert 'listed under "Judgment questions not asked" below' in notice[1]
    assert got[4][0] == "blockquote_open" and got[4][1].startswith("**Warning:** 2 of 3 judges answered")
    assert got[5] == ("paragraph_open", "_skipped 1 disabled case: D1_")
    table = kinds.index("table_open")
    assert table == 6
    section = got.index(("heading_open", "Judgment questions not asked"))
    assert section > table
    listed = path.read_text(encoding="utf-8").split("## Judgment questions not asked", 1)[1]
    assert "- MD1: hub.incomplete_answer\n- F1: hub.incomplete_answer, hub.unfaithful_answer\n" in listed
    # The rows are read back as before, and each note is written once.
    assert [r["ID"] for r in read_rows(path)] == ["MD1", "F1", "R1"]
    before = path.read_bytes()
    assert not any(note(path) for note in NOTES.values())
    assert path.read_bytes() == before


def test_without_a_baseline_or_a_question_left_nothing_comes_before_the_changes(tmp_path):
    path = report(tmp_path)
    assert insert_not_asked(path, 0, 0, []) is False  # every question was put to a judge: no note at all
    insert_changes(path, None, ["- no baseline to compare with: every unit is new"])
    got = blocks(path)
    assert got[1][1].startswith("Changes ") and got[3][0] == "table_open"
    assert "not asked" not in path.read_text(encoding="utf-8")


def test_rows_appended_after_the_section_reopen_the_table(tmp_path):
    path = report(tmp_path)
    insert_not_asked(path, 1, 1, UNASKED[:1])
    append_entry(path, ROW.format(id="Q9"), None)
    assert [r["ID"] for r in read_rows(path)] == ["MD1", "F1", "R1", "Q9"]


def test_more_units_than_are_listed_are_counted(tmp_path):
    path = report(tmp_path)
    many = [(f"U{i}", ["hub.incomplete_answer"]) for i in range(60)]
    insert_not_asked(path, 70, 70, many)
    listed = path.read_text(encoding="utf-8").split("## Judgment questions not asked", 1)[1]
    assert listed.count("- U") == 50 and "- … 20 more units (results.json)" in listed
