"""TOP-REGRESSIONS.md, comparison.json and LOSS-HISTORY.md."""
import json

import pytest
from markdown_it import MarkdownIt
from obai_e2e.base.errors import WriteOnceViolation
from obai_e2e.config.sections import Privacy
from obai_e2e.loss.compare import compare
from obai_e2e.loss.reports import (
    HISTORY_COLUMNS,
    SEED_TOP_COLUMNS,
    TOP_COLUMNS,
    CitationMissing,
    append_history,
    cite,
    read_top_rows,
    top_regressions_md,
    write_comparison,
    write_top_regressions,
)
from obai_e2e.loss.score import score

from .helpers import cat, catalog, ev, plan, results, unit
from .test_compare import CATALOG, PLAN, base_units, new_units

PK = "intent=p,provenance=synthetic"


@pytest.fixture
def scored(tmp_path):
    p = plan(tmp_path, PLAN)
    new = score(results(new_units(), run_id="2026-12-02/090000", created_at="2026-12-02T09:00:00.123456Z"), CATALOG, p)
    base = score(results(base_units(), run_id="2026-12-01/090000"), CATALOG, p, mode="B")
    return new, base, compare(new, base)


def table_rows(text: str) -> list[list[str]]:
    """Rows of the first table, parsed as Markdown (so escaping is tested, not assumed)."""
    tokens = MarkdownIt().enable("table").parse(text)
    rows, current, inside = [], None, False
    for t in tokens:
        if t.type == "tr_open":
            current = []
        elif t.type in ("th_open", "td_open"):
            inside = True
        elif t.type == "inline" and inside and current is not None:
            current.append(t.content)
            inside = False
        elif t.type == "tr_close":
            rows.append(current)
    return rows


def test_top_regressions_rows_and_citations(scored):
    new, _, comp = scored
    text, rows = top_regressions_md(comp, new)
    parsed = table_rows(text)
    assert parsed[0] == TOP_COLUMNS
    # the seed's columns in English, in the seed's order, then the extra one
    assert parsed[0][:8] == ["partition", "category", "delta", "ci_low", "ci_high", "n", "run_id", "citation"]
    assert parsed[0][8:] == ["detectable_effect"]
    assert [r[:2] for r in parsed[1:]] == [[PK, "output"], [PK, "routing"]]
    out = parsed[1]
    assert out[2:7] == ["0.5000", "0.5000", "0.5000", "8", "2026-12-02/090000"]
    # the citation: first unit by id with a tripped code, its span id and excerpt, escaped for the cell
    assert out[7] == 'P0 · specialist.market_data_analysis.empty · span s-0 · "payload: {} | empty second line"'
    assert '"payload: {} \\| empty second line"' in text   # the pipe is escaped, so the row keeps 9 cells
    assert all(len(r) == 9 for r in parsed)
    assert out[8] == "0.0500"   # se_delta 0: the cell detects anything above the mde
    routing = parsed[2]
    assert routing[3] == f"{comp.findings[1].ci_low:.4f}" and routing[7].startswith("P0 · routing.skill_missing · span r-0")
    assert rows[0]["citation"] == {"unit_id": "P0", "code": "specialist.market_data_analysis.empty", "span_id": "s-0",
                                   "excerpt": "payload: {} | empty second line"}


def test_empty_table_is_a_valid_result(tmp_path):
    p = plan(tmp_path, PLAN)
    same = score(results(base_units()), CATALOG, p)
    comp = compare(same, same)
    text, rows = top_regressions_md(comp, same)
    assert rows == [] and table_rows(text) == [TOP_COLUMNS]
    assert "No provable regression" in text


def test_finding_without_citation_is_refused(tmp_path):
    p = plan(tmp_path, PLAN)
    new = score(results([unit(f"P{i}", labels={"intent": "p"}, trips=[("routing.skill_missing", "fail", [])])
                         for i in range(4)]), CATALOG, p)
    base = score(results([unit(f"P{i}", labels={"intent": "p"}) for i in range(4)]), CATALOG, p, mode="B")
    comp = compare(new, base)
    assert len(comp.findings) == 1
    with pytest.raises(CitationMissing, match="no log citation"):
        write_top_regressions(tmp_path / "TOP-REGRESSIONS.md", comp, new)
    assert not (tmp_path / "TOP-REGRESSIONS.md").exists()


def test_quote_withheld_for_korpus(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {provenance: korpus}\n    frequency: 1\n    damage: 1\n    s: 0\n")
    trips = [("routing.skill_missing", "fail", [ev("Hi, this is [NAME-bcdfgh]", "span-9")])]
    new = score(results([unit(f"K{i}", provenance="korpus", trips=trips) for i in range(3)]), CATALOG, p)
    hidden = cite(new, "provenance=korpus", "routing", Privacy((), 30, False))
    assert (hidden.unit_id, hidden.span_id, hidden.excerpt) == ("K0", "span-9", "[quote withheld]")
    shown = cite(new, "provenance=korpus", "routing", Privacy((), 30, True))
    assert shown.excerpt == "Hi, this is [NAME-bcdfgh]"
    assert cite(new, "provenance=korpus", "routing", None).excerpt == "[quote withheld]"   # no privacy section


def test_model_judged_citation_from_the_judge_panel(tmp_path):
    c = catalog([cat("routing", 0.8, ["routing.*"]), cat("complete", 0.2, ["hub.incomplete_answer"], "model_judged")])
    p = plan(tmp_path, "partitions:\n  - labels: {intent: p}\n    frequency: 1\n    damage: 1\n    s: 0\n")
    panel = {"judges": ["j1", "j2"], "questions": {"hub.incomplete_answer": {
        "ratings": [0, 1], "evidence": [{"judge": "j1", "spans": ["a-1"], "numbers": []},
                                        {"judge": "j2", "spans": ["a-2"], "numbers": ["238.41"]}],
        "rationale": [{"judge": "j2", "text": "The 52-week range was asked for and is missing."}]}}}
    us = [unit("P1", labels={"intent": "p"}, ratings={"hub.incomplete_answer": [0, 1]}, panel=panel),
          unit("P0", labels={"intent": "p"}, ratings={"hub.incomplete_answer": [0, 0]})]
    got = cite(score(results(us), c, p), PK, "complete")
    assert (got.unit_id, got.code, got.span_id) == ("P1", "hub.incomplete_answer", "a-2")
    assert got.excerpt == "The 52-week range was asked for and is missing."
    # without a panel: the answer the question was about (the rule's own evidence)
    us = [unit("P0", labels={"intent": "p"}, answers={"hub.incomplete_answer": "no"})]
    got = cite(score(results(us), c, p), PK, "complete")
    assert got.code == "hub.incomplete_answer" and got.excerpt.startswith("AAPL (Apple) last closed at 238.41")


def test_write_once_and_comparison_json(scored, tmp_path):
    new, _, comp = scored
    path = tmp_path / "TOP-REGRESSIONS.md"
    rows = write_top_regressions(path, comp, new)
    write_top_regressions(path, comp, new)            # identical bytes: a no-op
    write_comparison(tmp_path / "comparison.json", comp, new, rows)
    data = json.loads((tmp_path / "comparison.json").read_text())
    assert data["k"] == 3 and data["findings"] == 2 and len(data["cells"]) == 3
    assert data["citations"][0]["unit_id"] == "P0" and data["baseline_run_id"] == "2026-12-01/090000"
    assert all("detectable_effect" in c and "paired" in c for c in data["cells"])
    other = compare(new, new)
    with pytest.raises(WriteOnceViolation):
        write_top_regressions(path, other, new)


def test_loss_history_one_row_per_run(scored, runs_root):
    new, _, comp = scored
    path, appended = append_history(new.suite, comp)
    assert appended and path == runs_root / "LOSS-HISTORY.md"
    assert append_history(new.suite, comp) == (path, False)
    rows = table_rows(path.read_text(encoding="utf-8"))
    assert rows[0] == HISTORY_COLUMNS
    assert rows[1] == ["2026-12-02T09:00:00Z", "v1", "A", "synthetic", f"{new.suite['suite_score']:.4f}",
                       "1.0000", f"{new.suite['coverage']:.4f}", "0.05", str(2 + 576), "3", "2",
                       f"{comp.findings[0].ci_low:.4f}"]
    # another run: one more row, the header stays single
    other = dict(new.suite, run_id="2026-12-03/090000", run_created_at="2026-12-03T09:00:00Z")
    append_history(other, None)
    text = path.read_text(encoding="utf-8")
    assert text.count("| date |") == 1
    last = table_rows(text)[-1]
    assert last[0] == "2026-12-03T09:00:00Z" and last[10:] == ["—", "—"]


def test_loss_history_repairs_a_kill_between_index_and_row(scored, runs_root):
    new, _, comp = scored
    path, _ = append_history(new.suite, comp)
    row = path.read_text(encoding="utf-8").splitlines()[-1] + "\n"
    path.write_text(path.read_text(encoding="utf-8").replace(row, ""), encoding="utf-8")   # the row never landed
    assert append_history(new.suite, comp) == (path, True)
    assert append_history(new.suite, comp) == (path, False)
    assert path.read_text(encoding="utf-8").count(row) == 1


def test_a_history_with_the_seeds_column_names_gets_the_english_ones(scored, runs_root):
    from obai_e2e.loss.reports import SEED_HISTORY_COLUMNS

    new, _, comp = scored
    old_row = "| 2026-12-01T09:00:00Z | v1 | A | synthetic | 0.1000 | 1.0000 | 1.0000 | 0.05 | 4 | 0 | 0 | — |\n"
    path = runs_root / "LOSS-HISTORY.md"
    path.write_text("# Loss history\n\n| " + " | ".join(SEED_HISTORY_COLUMNS) + " |\n|" + "---|" * 12 + "\n"
                    + old_row, encoding="utf-8")
    append_history(new.suite, comp)
    rows = table_rows(path.read_text(encoding="utf-8"))
    assert rows[0] == HISTORY_COLUMNS and len(rows) == 3 and rows[1][0] == "2026-12-01T09:00:00Z"
    assert "datum" not in path.read_text(encoding="utf-8")


def test_readers_take_the_table_with_or_without_the_extra_column(scored):
    new, _, comp = scored
    text, _ = top_regressions_md(comp, new)
    now = read_top_rows(text)
    assert [r["category"] for r in now] == ["output", "routing"] and now[0]["detectable_effect"] == "0.0500"
    # a file written before the extra column: the seed's eight columns only
    old = "| " + " | ".join(SEED_TOP_COLUMNS) + " |\n|" + "---|" * 8 + "\n" + \
        "| intent=p | output | 0.5000 | 0.5000 | 0.5000 | 8 | r | P0 · x · span s · \"e\" |\n"
    rows = read_top_rows(old)
    assert len(rows) == 1 and rows[0]["citation"].startswith("P0") and "detectable_effect" not in rows[0]
    assert rows[0]["category"] == "output"  # read under the English names
    assert read_top_rows("| a | b |\n|---|---|\n| 1 | 2 |\n") == []
