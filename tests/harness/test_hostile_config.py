"""Hostile values in cases.yaml, target.yaml and JSON inputs: refused with the file, item and field named."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from obai_e2e.base import jsonio, schema
from obai_e2e.base.errors import ConfigError, VerdictInvalid
from obai_e2e.base.paths import bundle_root
from obai_e2e.config.cases import load_cases
from obai_e2e.config.target import load_target_config
from obai_e2e.loss.catalog import parse_catalog

CASE = """\
version: 1
cases:
  - id: A1
    feature: market_data
    query: "What is the price of AAPL?"
    labels: {intent: price_lookup}
"""
TARGET = (bundle_root() / "cases" / "target.yaml").read_text(encoding="utf-8")


def write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refuse_case(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text, "cases.yaml")
    with pytest.raises(ConfigError) as err:
        load_cases(path)
    assert str(err.value).startswith(f"{path}:")
    return str(err.value)


def refuse_target(tmp_path: Path, old: str, new: str) -> str:
    assert old in TARGET
    path = write(tmp_path, TARGET.replace(old, new, 1), "target.yaml")
    with pytest.raises(ConfigError) as err:
        load_target_config(path)
    assert str(err.value).startswith(f"{path}:")
    return str(err.value)


def test_nul_in_a_query_is_refused(tmp_path):
    msg = refuse_case(tmp_path, CASE.replace("price of AAPL", "price\\0 of AAPL"))
    assert ":5: case 'A1', field /cases/0/query: contains U+0000 (NUL) at character 18" in msg


@pytest.mark.parametrize("escape, char", [("\\e", "\x1b"), ("\\a", "\a"), ("\\x7f", "\x7f"), ("\\x9b", "\x9b"),
                                          ("\\r", "\r"), ("\\x08", "\b"), ("\\N", "\x85"), ("\\v", "\v")])
def test_a_query_holds_any_other_control_character_as_asked(tmp_path, escape, char):
    """A question is kept as the agent was asked it (adopt drafts real ones); reports show such characters escaped."""
    path = write(tmp_path, CASE.replace("price of AAPL", f"price{escape} of AAPL"), "cases.yaml")
    assert load_cases(path).cases[0].query == f"What is the price{char} of AAPL?"


def test_tab_and_newline_in_a_query_are_fine(tmp_path):
    path = write(tmp_path, CASE.replace("price of AAPL?", "price\\tof AAPL?\\nand MSFT?"), "cases.yaml")
    assert load_cases(path).cases[0].query == "What is the price\tof AAPL?\nand MSFT?"
    text = CASE.replace('    query: "What is the price of AAPL?"\n', "    query: |\n      line one\n      line two\n")
    assert load_cases(write(tmp_path, text, "cases.yaml")).cases[0].query == "line one\nline two\n"


def test_non_ascii_text_is_fine(tmp_path):
    text = CASE.replace("What is the price of AAPL?", "Wie steht die Aktie von Müller & Söhne? 株価は？ \u00a0€")
    assert "株価" in load_cases(write(tmp_path, text, "cases.yaml")).cases[0].query


@pytest.mark.parametrize("where, line", [
    ('    labels: {intent: "price\\nlookup"}', 6),
    ('    labels: {intent: "price\\0"}', 6),
    ('    description: "x\\e[2J"', 6),
    ('    disabled_reason: "bell\\a"', 6),
    ('    known_needs_review: ["hub.incomplete_answer\\e"]', 6),
])
def test_control_characters_elsewhere_in_a_case_are_refused(tmp_path, where, line):
    text = CASE.replace("    labels: {intent: price_lookup}", where)
    msg = refuse_case(tmp_path, text)
    assert f":{line}: case 'A1'" in msg and "control characters are not allowed" in msg


def test_control_character_in_an_id_is_refused(tmp_path):
    msg = refuse_case(tmp_path, CASE.replace("id: A1", 'id: "A\\01"'))
    assert "field /cases/0/id" in msg and "U+0000 (NUL)" in msg


def test_non_finite_repeats_and_huge_numbers_in_cases(tmp_path):
    assert "not a finite number" in refuse_case(tmp_path, CASE + "    repeats: .nan\n")
    assert ":7:" in refuse_case(tmp_path, CASE + "    repeats: 100000000000000000000\n")
    assert "repeats" in refuse_case(tmp_path, CASE + "    repeats: 1000000\n")


@pytest.mark.parametrize("old, new, expected", [
    ("timeout_s: 180", "timeout_s: .nan", ":16: '.nan' is not a finite number"),
    ("kill_grace_s: 2", "kill_grace_s: .inf", ":17: '.inf' is not a finite number"),
    ("timeout_s: 180", "timeout_s: 1.0e+999", "not a finite number"),
    ("timeout_s: 180", "timeout_s: 1.0e+300", "field /target/timeout_s"),
    ("timeout_s: 180", "timeout_s: 86401", "field /target/timeout_s"),
    ("kill_grace_s: 2", "kill_grace_s: 3600", "field /target/kill_grace_s"),
    ("refusal_exit_code: 1", "refusal_exit_code: 256", "field /target/refusal_exit_code"),
    ("refusal_exit_code: 1", "refusal_exit_code: 99999999999999999999", "out of range"),
    ("resolve_deadline_s: 20", "resolve_deadline_s: -.inf", "not a finite number"),
    ("margin_s: 1", "margin_s: 1e999", "field /async_jobs/margin_s"),  # YAML 1.1: a string, not a float
    ("flush_timeout_s: 5", "flush_timeout_s: 1000000", "field /trace_backend/flush_timeout_s"),
    ("retention_days: 30", "retention_days: 10000000", "field /privacy/retention_days"),
])
def test_non_finite_and_out_of_range_numbers_in_target(tmp_path, old, new, expected):
    assert expected in refuse_target(tmp_path, old, new)


@pytest.mark.parametrize("old, new, field", [
    ('"{session}", "{query}"]', '"{session}", "{query}", "a\\0b"]', "/target/command/5"),
    ('OBAI_DEMO_ETA_SECONDS: "1"', 'OBAI_DEMO_ETA_SECONDS: "1\\0"', "/target/env/OBAI_DEMO_ETA_SECONDS"),
    ('OBAI_DEMO_ETA_SECONDS: "1"', '"BAD=NAME": "1"', "/target/env"),
    ("hub_span: hub", 'hub_span: "hub\\e[31m"', "/vocabulary/hub_span"),
    ('workdir: "."', 'workdir: ".\\0"', "/target/workdir"),
    ("project: obai-demo", 'project: "obai\\ndemo"', "/trace_backend/project"),
])
def test_control_characters_in_target_are_refused(tmp_path, old, new, field):
    msg = refuse_target(tmp_path, old, new)
    assert f"field {field}" in msg


def test_bundled_target_still_loads():
    config = load_target_config()
    assert config.target.timeout_s == 180


def test_catalog_json_with_nan_or_infinity_is_refused():
    good = json.loads((bundle_root() / "catalogs" / "loss-catalog.v1.json").read_text(encoding="utf-8"))
    for bad in ("NaN", "Infinity", "-Infinity", "1e999"):
        good["categories"][1]["weight"] = "HERE"
        text = json.dumps(good).replace('"HERE"', bad)
        with pytest.raises(ConfigError) as err:
            parse_catalog(text, "cat.json")
        assert str(err.value).startswith("cat.json: ") and "/categories/1/weight" in str(err.value)
        assert "not a finite number" in str(err.value)


def test_schema_check_refuses_non_finite_numbers_with_the_pointer():
    data = yaml.safe_load(CASE)
    data["cases"][0]["repeats"] = float("inf")
    with pytest.raises(ConfigError, match=r"^c\.yaml: field /cases/0/repeats: inf is not a finite number"):
        schema.check(data, "cases.schema.json", source="c.yaml")


def test_fast_acceptance_agrees_with_jsonschema_on_bundled_and_broken_data():
    base = yaml.safe_load((bundle_root() / "cases" / "cases.yaml").read_text(encoding="utf-8"))
    validator = schema.validator("cases.schema.json")
    assert schema.fast_valid("cases.schema.json", base) and validator.is_valid(base)
    mutations = [("query", 1), ("query", ""), ("query", "a\x00"), ("id", "a/b"), ("repeats", 0), ("repeats", 1.5),
                 ("labels", {"Bad": "x"}), ("labels", {"ok": ""}), ("smoke", "yes"), ("expected_tools", ["a", "a"]),
                 ("expect_options_shape", "other"), ("extra", 1), ("query", "\u00e9\u20ac\t\n")]
    for key, value in mutations:
        data = copy.deepcopy(base)
        data["cases"][3][key] = value
        assert schema.fast_valid("cases.schema.json", data) == validator.is_valid(data), (key, value)


def test_jsonio_refuses_non_finite_numbers_with_the_pointer():
    for text, pointer in [('{"a": [1, NaN]}', "/a/1"), ('{"a": {"b": 1e999}}', "/a/b"), ('{"x": -Infinity}', "/x")]:
        with pytest.raises(ConfigError, match=f"^f.json: field {pointer}: .* is not a finite number"):
            jsonio.loads(text, source="f.json")
    assert jsonio.loads('{"a": 1.5, "b": [true, null, -0.0]}', source="f.json") == {"a": 1.5, "b": [True, None, 0.0]}


def test_jsonio_names_the_source_for_every_kind_of_bad_text(tmp_path):
    cases = {
        b"[" * 100_000: "nested too deeply",
        b'{"a": ' + b"9" * 5000 + b"}": "thousands of digits",
        b"\xff{}": "not UTF-8 text",
        b'{"a": 1,}': ":1: not valid JSON",
    }
    for raw, expected in cases.items():
        path = tmp_path / "in.json"
        path.write_bytes(raw)
        with pytest.raises(VerdictInvalid) as err:
            jsonio.load(path, error=VerdictInvalid)
        assert str(err.value).startswith(str(path)) and expected in str(err.value)
    with pytest.raises(ConfigError, match="file not found"):
        jsonio.load(tmp_path / "missing.json")
