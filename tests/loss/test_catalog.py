"""The loss catalog: the bundled one loads; bad ones are refused naming file, field and requirement."""
import json

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.base.paths import catalogs_dir
from obai_e2e.loss.catalog import globs_intersect, load_catalog, parse_catalog

from .helpers import cat, catalog_text

GOOD = [cat("routing", 0.5, ["routing.*"]), cat("output", 0.3, ["specialist.*.empty"]),
        cat("completeness", 0.2, ["hub.incomplete_answer"], "model_judged")]


def refuse(categories, match: str, source: str = "cat.json") -> str:
    with pytest.raises(ConfigError) as err:
        parse_catalog(catalog_text(categories), source)
    msg = str(err.value)
    assert msg.startswith(source), msg
    assert match in msg, msg
    return msg


def test_bundled_catalog_loads():
    c = load_catalog(catalogs_dir() / "loss-catalog.v1.json")
    assert c.version == "v1"
    assert len(c.categories) == 8
    assert c.categories_for("specialist.options_analysis.empty") == (c.by_id("specialist_output").index,)
    assert c.categories_for("hub.unverified_number:238.41") == (c.by_id("answer_grounding").index,)
    assert c.categories_for("trace.error_span:hub") == (c.by_id("runtime_errors").index,)
    assert c.categories_for("no.such.code") == ()


def test_model_judged_sum_at_the_limit_is_exact():
    # 0.1 + 0.2 is 0.30000000000000004 in floating point; as written it is exactly 0.30.
    cats = [cat("a", 0.5, ["routing.*"]), cat("b", 0.1, ["hub.incomplete_answer"], "model_judged"),
            cat("c", 0.2, ["hub.incomplete_answer"], "model_judged")]
    assert 0.1 + 0.2 > 0.3
    c = parse_catalog(catalog_text(cats), "cat.json")
    assert [x.id for x in c.categories if x.model_judged] == ["b", "c"]


def test_model_judged_sum_above_limit_is_refused():
    cats = [cat("a", 0.5, ["routing.*"]), cat("b", 0.2, ["hub.incomplete_answer"], "model_judged"),
            cat("c", 0.11, ["hub.incomplete_answer"], "model_judged")]
    msg = refuse(cats, "field /categories:")
    assert "0.31" in msg and "must not exceed 0.30" in msg and "b 0.2 + c 0.11" in msg


def test_unknown_code_is_refused():
    msg = refuse(GOOD[:1] + [cat("x", 0.1, ["specialist.*.empty", "routing.skil_missing"])],
                 "field /categories/1/codes/1")
    assert "'routing.skil_missing' matches no rubric code" in msg and "category 'x'" in msg


def test_duplicate_id_is_refused():
    msg = refuse(GOOD + [cat("routing", 0.1, ["guardrail.leaky"])], "field /categories/3/id")
    assert "duplicate category id 'routing'" in msg and "/categories/0/id" in msg


def test_missing_field_is_refused():
    bad = dict(GOOD[0])
    del bad["weight"]
    msg = refuse([bad], "field /categories/0")
    assert "'weight' is required" in msg and "category 'routing'" in msg


def test_weight_must_be_positive():
    refuse([cat("routing", 0, ["routing.*"])], "field /categories/0/weight")


def test_unknown_type_and_field():
    refuse([cat("routing", 0.1, ["routing.*"], "fuzzy")], "field /categories/0/type")
    refuse([cat("routing", 0.1, ["routing.*"], colour="red")], "unknown field")


def test_not_json_names_the_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"version": "v1",\n "categories": [,]}')
    with pytest.raises(ConfigError, match=r"c\.json:2: not valid JSON"):
        load_catalog(path)


def test_missing_file():
    with pytest.raises(ConfigError, match="loss catalog not found"):
        load_catalog("/nonexistent/catalog.json")


def test_needs_execution_flag():
    c = parse_catalog(json.dumps({"version": "v2", "categories": [
        cat("retry", 0.2, ["trace.error_span:*"], needs_execution=True), cat("r", 0.8, ["routing.*"])]}), "c")
    assert c.by_id("retry").needs_execution and not c.by_id("r").needs_execution


@pytest.mark.parametrize("a,b,expected", [
    ("specialist.*.empty", "specialist.*.empty", True),
    ("specialist.strategy.*", "specialist.*.empty", True),
    ("trace.error_span:hub", "trace.error_span:*", True),
    ("hub.unverified_number:*", "hub.unverified_number:*", True),
    ("routing.skil_missing", "routing.skill_missing", False),
    ("*", "x*", True),
    ("a?c", "abc", True),
    ("a?c", "abbc", False),
])
def test_glob_intersection(a, b, expected):
    assert globs_intersect(a, b) is expected
    assert globs_intersect(b, a) is expected
