"""report.md: hostile text cannot break the table, rows are read back by parsing."""
from markdown_it import MarkdownIt
from obai_e2e.base.mdtable import row
from obai_e2e.report.report_md import (
    append_entry,
    detail_block,
    ensure_header,
    judged_ids,
    read_rows,
)

HOSTILE = "a | b\nc `code | x` </script><img src=x onerror=alert(1)> \\| end\r\n| FAKE | row |"


def test_hostile_cells_stay_in_their_cell(tmp_path):
    report = tmp_path / "report.md"
    assert ensure_header(report, "2026-11-29 10:00:00 UTC", "skipped 1 disabled cases: D1")
    assert not ensure_header(report, "later", None)  # written once
    append_entry(report, row(["U1", "feat", "fail", HOSTILE, "t1", "12"]),
                 detail_block("U1", "fail", HOSTILE, HOSTILE, HOSTILE, HOSTILE))
    append_entry(report, row(["U2", "feat", "pass", "", "t2", "13"]), None)
    append_entry(report, row(["U3", HOSTILE, "needs_review", "hub.unverified_number:1|2", "t3", "1+2+3"]),
                 detail_block("U3", "needs_review", "q", "e", "o", "j"))
    rows = read_rows(report)
    assert [r["ID"] for r in rows] == ["U1", "U2", "U3"]
    assert rows[0]["Reason"] == HOSTILE.replace("\r\n", " ").replace("\n", " ").strip()
    assert rows[2]["Reason"] == "hub.unverified_number:1|2"
    assert rows[2]["Latency"] == "1+2+3"
    # No raw HTML survives anywhere in the file: every "<" that could open a tag is escaped.
    text = report.read_text()
    assert "\\</script>\\<img" in text and "&lt;" not in text
    kinds = {t.type for tok in MarkdownIt("commonmark").enable("table").parse(text) for t in (tok, *(tok.children or []))}
    assert not kinds & {"html_inline", "html_block"}
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in html and "</script>" not in html
    # The fake row inside the reason is not a row.
    assert "FAKE" not in judged_ids(report)


def test_comparisons_and_ampersands_read_as_written_and_stay_inert(tmp_path):
    """A judgment with < > & reads in the raw file as it was written, not as HTML entities."""
    judgment = "P/E < 30 and RSI > 70 for AT&T, x<y is fine; <b>bold</b>, &amp; and &#60; stay text"
    block = detail_block("F5", "needs_review", "q", "e", "o", judgment)
    line = block.strip("\n").split("\n")[-1]
    assert line == ("- judgment: P/E < 30 and RSI > 70 for AT&T, x\\<y is fine; \\<b>bold\\</b>, "
                    "\\&amp; and \\&#60; stay text")
    html = MarkdownIt("commonmark").render(block)
    assert "P/E &lt; 30 and RSI &gt; 70 for AT&amp;T" in html and "<b>" not in html
    assert "&amp;amp; and &amp;#60;" in html  # the references are shown, not resolved
    from obai_e2e.report.html_inputs import read_detail_blocks

    report = tmp_path / "report.md"
    ensure_header(report, "t", None)
    append_entry(report, row(["F5", "f", "needs_review", "> quoted", "t", "1"]), block)
    assert read_rows(report)[0]["Reason"] == "> quoted"
    assert read_detail_blocks(report)["F5"].judgment == judgment


def test_cells_written_with_entities_by_older_versions_read_back():
    from obai_e2e.base.mdtable import unescape

    assert unescape("P/E &lt; 30 &amp; x &gt; 1 \\| y") == "P/E < 30 & x > 1 | y"


def test_detail_block_format(tmp_path):
    block = detail_block("S1", "fail", "q" * 200, "tools: a", "tools: b", "a: missing.")
    lines = block.strip("\n").split("\n")
    assert lines[0] == "**S1 — fail**"
    assert lines[1] == "- query: " + "q" * 120
    assert lines[2:] == ["- expected: tools: a", "- observed: tools: b", "- judgment: a: missing."]


def test_torn_tail_is_ignored_and_trimmed(tmp_path):
    report = tmp_path / "report.md"
    ensure_header(report, "t", None)
    append_entry(report, row(["U1", "f", "pass", "", "t", "1"]), None)
    with open(report, "a") as fh:
        fh.write("| U2 | f | pa")  # a kill in the middle of a write
    assert judged_ids(report) == ["U1"]
    append_entry(report, row(["U2", "f", "pass", "", "t", "1"]), None)
    assert judged_ids(report) == ["U1", "U2"]
    assert "| pa\n" not in report.read_text()


def test_ids_are_matched_by_cell_not_substring(tmp_path):
    report = tmp_path / "report.md"
    ensure_header(report, "t", None)
    append_entry(report, row(["MD10", "f", "pass", "see | MD1 |", "t", "1"]), None)
    assert judged_ids(report) == ["MD10"]
    assert "MD1" not in judged_ids(report)


FORGED = ("[ALL PASS](https://evil.example/x) ![px](https://evil.example/p.png) [ref]: https://evil.example "
          "<https://evil.example> <b>bold</b> &lt;i&gt; pa\u202egnp.exe zero\u200bwidth\u2066iso\u2069 \U000e0041")


def _tokens(text: str) -> list:
    out = []
    for tok in MarkdownIt("commonmark").enable("table").parse(text):
        out.append(tok)
        out.extend(tok.children or [])
    return out


def test_links_images_and_html_from_a_value_render_as_their_text(tmp_path):
    report = tmp_path / "report.md"
    ensure_header(report, "now", None, FORGED)
    append_entry(report, row(["U1", "feat", "fail", FORGED, "t1", "1"]),
                 detail_block("U1", "fail", FORGED, FORGED, FORGED, FORGED))
    text = report.read_text(encoding="utf-8")
    kinds = {t.type for t in _tokens(text)}
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, kinds
    for invisible in ("\u202e", "\u200b", "\u2066", "\u2069", "\U000e0041"):
        assert invisible not in text
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    assert "[ALL PASS](https://evil.example/x)" in rendered and "pa&lt;U+202E&gt;gnp.exe" in rendered
    assert "<a " not in rendered and "<img" not in rendered and "<b>" not in rendered
    # Read back, a cell is the text that was written, with the invisible characters named.
    [r] = read_rows(report)
    assert r["Reason"] == (FORGED.replace("\u202e", "<U+202E>").replace("\u200b", "<U+200B>")
                           .replace("\u2066", "<U+2066>").replace("\u2069", "<U+2069>")
                           .replace("\U000e0041", "<U+E0041>"))


def test_a_trace_link_the_harness_builds_stays_a_link():
    from obai_e2e.base.mdtable import Md

    line = row(["U1", Md("[0192](http://127.0.0.1:5/traces/0192)"), "[0192](http://127.0.0.1:5/traces/0192)"])
    links = [t for t in _tokens(line) if t.type == "link_open"]
    assert [t.attrs["href"] for t in links] == ["http://127.0.0.1:5/traces/0192"]  # the Md cell alone


def _long_report(path, rows: int, *, blocks_every: int = 300) -> None:
    ensure_header(path, "t", "skipped 1 disabled cases: D1")
    for i in range(rows):
        block = detail_block(f"U{i}", "fail", HOSTILE, "e", "o", "j") if i % blocks_every == 0 else None
        append_entry(path, row([f"U{i}", "f", "fail" if block else "pass", HOSTILE if i % 7 == 0 else "", "t",
                                str(i)]), block)


def test_a_long_table_is_read_in_slices_with_the_rows_of_one_whole_parse(tmp_path):
    from obai_e2e.base.mdtable import table_rows
    from obai_e2e.report.report_md import COLUMNS, SLICE_ROWS

    report = tmp_path / "report.md"
    _long_report(report, 3 * SLICE_ROWS + 7, blocks_every=900)
    whole = table_rows(report.read_text(encoding="utf-8"), COLUMNS)
    assert len(whole) == 3 * SLICE_ROWS + 7
    assert read_rows(report) == whole
    assert judged_ids(report)[-1] == f"U{3 * SLICE_ROWS + 6}"


def test_a_table_that_ends_inside_a_slice_ends_there_as_in_one_whole_parse(tmp_path):
    """A line that ends the table (a quote) in the middle of a slice: the rows after it are no rows."""
    from obai_e2e.base.mdtable import table_rows
    from obai_e2e.report.report_md import COLUMNS, SLICE_ROWS, TABLE_HEAD

    report = tmp_path / "report.md"
    lines = [row([f"U{i}", "f", "pass", "", "t", "1"]) for i in range(2 * SLICE_ROWS)]
    lines.insert(SLICE_ROWS + 3, "> a quote ends the table\n")
    report.write_text("# t\n\n" + TABLE_HEAD + "".join(lines), encoding="utf-8")
    whole = table_rows(report.read_text(encoding="utf-8"), COLUMNS)
    assert len(whole) == SLICE_ROWS + 3
    assert read_rows(report) == whole


def test_a_fenced_table_is_no_table_in_slices_either(tmp_path):
    """An edited file with a code fence around table lines: read as one whole parse reads it."""
    from obai_e2e.base.mdtable import table_rows
    from obai_e2e.report.report_md import COLUMNS, TABLE_HEAD

    report = tmp_path / "report.md"
    _long_report(report, 5)
    fenced = "```\n\n" + TABLE_HEAD + row(["FAKE", "f", "pass", "", "t", "1"]) + "\n```\n"
    with open(report, "a", encoding="utf-8") as fh:
        fh.write("\n" + fenced + "\n" + TABLE_HEAD + row(["U9", "f", "pass", "", "t", "1"]))
    whole = table_rows(report.read_text(encoding="utf-8"), COLUMNS)
    assert [r["ID"] for r in whole] == ["U0", "U1", "U2", "U3", "U4", "U9"]
    assert read_rows(report) == whole


def test_head_notes_go_under_the_title_of_a_long_report_and_the_table_is_copied_as_it_was(tmp_path):
    """The notes are written into the beginning of report.md; the rows after it are copied, not read."""
    from obai_e2e.report.report_md import HEAD_BYTES, insert_changes, insert_judges, insert_not_asked

    report = tmp_path / "report.md"
    _long_report(report, 2000, blocks_every=50)
    before = report.read_text(encoding="utf-8")
    assert len(before.encode()) > HEAD_BYTES
    assert insert_changes(report, "2026-01-01/000000", ["- **1 new_fail**: U0 (x; was pass)"])
    assert insert_judges(report, "3 judges answered", ["a detail"], warn=False)
    assert insert_not_asked(report, 2, 1, [("U1", ["hub.incomplete_answer", "hub.unfaithful_answer"])])
    after = report.read_text(encoding="utf-8")
    title, _, table = before.partition("\n\n")
    assert after.startswith(title + "\n\n## Changes since 2026-01-01/000000")  # changes first, then the count
    notes = after.index("> **2 judgment question(s) not asked**"), after.index("> 3 judges answered")
    assert notes[0] < notes[1] < after.index("| ID |")
    assert table.rstrip("\n") in after and "## Changes since 2026-01-01/000000" in after[:HEAD_BYTES]
    assert after.endswith("\n\n- U1: hub.incomplete_answer, hub.unfaithful_answer\n")  # the units, after the table
    assert not insert_changes(report, "2026-01-01/000000", ["- again"])  # once
    assert report.read_text(encoding="utf-8") == after
    assert judged_ids(report) == [f"U{i}" for i in range(2000)]
