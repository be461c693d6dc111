"""Reading results as a head plus a stream of rows: the same scores as inline units, and clear errors."""
import json

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.base.fsutil import dumps_json
from obai_e2e.cli import main
from obai_e2e.loss.compare import compare
from obai_e2e.loss.reports import cite
from obai_e2e.loss.score import score
from obai_e2e.report.rows import UNITS_FILE, open_results, write_streamed

from .helpers import catalog_text, ev, plan, results, unit, write_results
from .test_commands import CATS
from .test_compare import CATALOG, PLAN, P, base_units, new_units

PK = "intent=p,provenance=synthetic"


def scored_both(tmp_path):
    p = plan(tmp_path, PLAN)
    data = results(new_units(), run_id="2026-12-02/090000")
    write_results(tmp_path / "inline", data)
    write_streamed(tmp_path / "streamed", data)
    inline = score(open_results(tmp_path / "inline" / "results.json"), CATALOG, p)
    streamed = score(open_results(tmp_path / "streamed" / "results.json"), CATALOG, p)
    return inline, streamed


def test_streamed_rows_score_exactly_like_inline_units(tmp_path):
    inline, streamed = scored_both(tmp_path)
    assert dumps_json(streamed.suite) == dumps_json(inline.suite)
    head = json.loads((tmp_path / "streamed" / "results.json").read_text())
    assert head["schema_version"] == 2 and "units" not in head
    assert head["units_file"]["path"] == UNITS_FILE and head["units_file"]["count"] == len(new_units())
    lines = (tmp_path / "streamed" / UNITS_FILE).read_bytes().splitlines()
    assert [json.loads(x)["unit_id"] for x in lines] == [u["unit_id"] for u in new_units()]


def test_citations_are_read_back_from_the_rows_file_by_offset(tmp_path):
    inline, streamed = scored_both(tmp_path)
    for category in ("routing", "output", "guard"):
        assert cite(streamed, PK, category) == cite(inline, PK, category)
    c = cite(streamed, PK, "guard")
    assert (c.unit_id, c.code, c.excerpt) == ("P0", "guardrail.leaky_response", "leaked 238.41")


def test_score_loss_on_a_streamed_run(tmp_path, runs_root, capsys):
    cat_path = tmp_path / "catalog.json"
    cat_path.write_text(catalog_text(CATS))
    plan(tmp_path, PLAN)
    new_dir, base_dir = runs_root / "2026-12-02" / "090000", runs_root / "2026-12-01" / "090000"
    write_streamed(new_dir, results(new_units(), run_id="2026-12-02/090000"))
    write_streamed(base_dir, results(base_units(), run_id="2026-12-01/090000"))
    code = main(["score-loss", "--run-dir", str(new_dir), "--catalog", str(cat_path), "--plan",
                 str(tmp_path / "plan.yaml"), "--baseline", str(base_dir)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["findings"] == 2 and out["compared_cells"] == 3
    text = (new_dir / "TOP-REGRESSIONS.md").read_text()
    assert "P0 · specialist.market_data_analysis.empty · span s-0" in text


@pytest.fixture
def streamed(tmp_path):
    write_streamed(tmp_path, results(base_units(), run_id="2026-12-01/090000"))
    return tmp_path


def read_all(path):
    return [u for _, u in open_results(path / "results.json")]


def test_missing_rows_file(streamed):
    (streamed / UNITS_FILE).unlink()
    with pytest.raises(ConfigError, match="/units_file/path: the rows file results.units.jsonl is missing"):
        read_all(streamed)


def test_rows_file_of_another_length(streamed):
    rows = streamed / UNITS_FILE
    lines = rows.read_bytes().splitlines(keepends=True)
    rows.write_bytes(b"".join(lines[:-1]))
    with pytest.raises(ConfigError, match=r"10 row\(s\), but results.json field /units_file/count says 11"):
        read_all(streamed)


def test_rows_file_changed_after_the_run(streamed):
    rows = streamed / UNITS_FILE
    raw = rows.read_bytes()
    rows.write_bytes(raw.replace(b'"verdict":"pass"', b'"verdict":"fail"', 1))
    with pytest.raises(ConfigError, match="SHA-256 .* differs from results.json field /units_file/sha256"):
        read_all(streamed)


def test_torn_last_line(streamed):
    rows = streamed / UNITS_FILE
    rows.write_bytes(rows.read_bytes()[:-40])
    with pytest.raises(ConfigError, match=r"results.units.jsonl:11: the last line has no newline"):
        read_all(streamed)


def test_a_line_that_is_not_json(streamed):
    rows = streamed / UNITS_FILE
    lines = rows.read_bytes().splitlines(keepends=True)
    lines[2] = b"{not json\n"
    rows.write_bytes(b"".join(lines))
    with pytest.raises(ConfigError, match=r"results.units.jsonl:3: not a JSON object"):
        read_all(streamed)


def test_a_row_the_schema_rejects_names_line_and_field(tmp_path):
    # 250 rows: every second row is sampled, so line 2 is only checked when the scorer cannot use it
    us = [unit(f"P{i}", labels=P, trips=[("routing.skill_missing", "fail", [ev("x")])]) for i in range(250)]
    del us[1]["case_id"]
    write_streamed(tmp_path, results(us))
    p = plan(tmp_path, PLAN)
    with pytest.raises(ConfigError, match=r"results.units.jsonl:2: field /: 'case_id' is required"):
        score(open_results(tmp_path / "results.json"), CATALOG, p)
    us[1]["case_id"] = "P1"
    us[2]["rule_outcomes"] = "none"  # line 3 is in the sample: refused before any scoring
    write_streamed(tmp_path, results(us))
    with pytest.raises(ConfigError, match=r"results.units.jsonl:3: field /rule_outcomes: expected array"):
        score(open_results(tmp_path / "results.json"), CATALOG, p)


def test_head_errors(streamed):
    head = json.loads((streamed / "results.json").read_text())
    head["units_file"] = {"path": "../elsewhere.jsonl", "count": 3, "sha256": "0"}
    (streamed / "results.json").write_text(json.dumps(head))
    with pytest.raises(ConfigError, match="field /units_file: expected"):
        open_results(streamed / "results.json")
    head["units_file"] = {"path": UNITS_FILE, "count": 11, "sha256": "0"}
    del head["summary"]
    (streamed / "results.json").write_text(json.dumps(head))
    with pytest.raises(ConfigError, match="'summary' is required"):
        open_results(streamed / "results.json")


def test_compare_streamed_with_inline_baseline(tmp_path):
    p = plan(tmp_path, PLAN)
    write_streamed(tmp_path / "new", results(new_units(), run_id="n"))
    write_results(tmp_path / "base", results(base_units(), run_id="b"))
    comp = compare(score(open_results(tmp_path / "new" / "results.json"), CATALOG, p),
                   score(open_results(tmp_path / "base" / "results.json"), CATALOG, p, mode="B"))
    assert [c.category for c in comp.findings] == ["output", "routing"]
