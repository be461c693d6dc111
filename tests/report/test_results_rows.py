"""The results writer's rows file: complete or absent, read back the same through the one reader."""
import json

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.report.results import load_results, read_results_json
from obai_e2e.report.rows import (
    UNITS_FILE,
    check_head,
    open_results,
    unit_checker,
    write_rows,
)

UNITS = [{"unit_id": f"U{i}", "case_id": f"U{i}", "verdict": "pass", "labels": {"intent": "é"}, "n": i}
         for i in range(5)]


def test_rows_round_trip(tmp_path):
    spec = write_rows(tmp_path / UNITS_FILE, iter(UNITS))
    assert spec["path"] == UNITS_FILE and spec["count"] == 5 and len(spec["sha256"]) == 64
    lines = (tmp_path / UNITS_FILE).read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(x) for x in lines[:-1]] == UNITS
    assert "é".encode() in lines[0]                          # UTF-8, not escaped
    assert [p.name for p in tmp_path.iterdir()] == [UNITS_FILE]


def test_an_interrupted_write_leaves_no_rows_file(tmp_path):
    def units():
        yield UNITS[0]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_rows(tmp_path / UNITS_FILE, units())
    assert list(tmp_path.iterdir()) == []                   # neither the rows file nor its temporary


def test_a_head_and_rows_read_through_the_one_reader(tmp_path):
    spec = write_rows(tmp_path / UNITS_FILE, iter(UNITS))
    head = {"schema_version": 2, "kind": "obai-e2e-results", "summary": {}, "units_file": spec}
    (tmp_path / "results.json").write_text(json.dumps(head))
    data = read_results_json(tmp_path / "results.json")       # no schema check: display readers
    assert data["units"] == UNITS and "units_file" not in data and data["schema_version"] == 2
    with pytest.raises(ConfigError, match="field /: 'run' is required"):   # the checked reader: the frame
        load_results(tmp_path / "results.json")
    rows = open_results(tmp_path / "results.json", check=False)
    refs = [ref for ref, _ in rows]
    assert rows.entry(refs[3]) == UNITS[3]


def test_head_and_unit_checks_name_the_field():
    with pytest.raises(ConfigError, match="x.json: field /units_file: expected"):
        check_head({"units_file": {"path": UNITS_FILE, "count": -1, "sha256": "0"}}, "x.json")
    with pytest.raises(ConfigError, match="rows:7: field /: '[a-z_]+' is required"):
        unit_checker()({"unit_id": "U", "case_id": "U", "verdict": "pass"}, "rows:7")
