"""results.junit.xml: valid against the JUnit result schema, readable by junitparser, counts per verdict."""
from __future__ import annotations

from pathlib import Path

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite
from obai_e2e.report.html_inputs import cases_for_run
from obai_e2e.report.junit import UNIT_FIELDS, render, unit_seconds, write_junit

from .helpers import ALL, SCRIPT_BREAK, load, make_hostile

pytestmark = pytest.mark.slow

XSD = Path(__file__).with_name("junit-results.xsd")


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def only_suite(xml) -> TestSuite:
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    assert len(suites) == 1
    return suites[0]


def test_demo_run_junit_is_valid(schema, demo_run):
    path = demo_run.run_dir / "results.junit.xml"
    schema.validate(str(path))


def test_read_back_with_junitparser(demo_run):
    suite = only_suite(JUnitXml.fromfile(str(demo_run.run_dir / "results.junit.xml")))
    assert suite.name == "obai-e2e"
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, 1, 1, 1)

    cases = {c.name: c for c in suite}
    assert sorted(cases) == ["A1", "D1", "F1", "M3", "M5", "MD1", "R1"]
    units = {u["unit_id"]: u for u in demo_run.results["units"]}
    for name, case in cases.items():
        if name != "D1":
            assert case.classname == f"obai-e2e.{units[name]['feature']}"
            assert case.time == pytest.approx(unit_seconds(units[name]["latency"]), abs=1e-3)

    (failure,) = [r for r in cases["M3"].result if isinstance(r, Failure)]
    assert failure.message == failure.type == "routing.sequence_violation"
    assert units["M3"]["judgment"] in failure.text and "expected: " in failure.text and "observed: " in failure.text

    (error,) = [r for r in cases["R1"].result if isinstance(r, Error)]
    assert error.message == error.type == "trace_not_found"

    for name in ("F1", "M5"):  # needs_review: passes, with the soft codes in system-out
        assert cases[name].is_passed
        assert units[name]["reasons"][0] in cases[name].system_out
    assert cases["MD1"].is_passed and cases["A1"].is_passed
    a1 = units["A1"]["latency"]
    assert cases["A1"].time == pytest.approx(a1["turn_ms"] / 1000 + a1["wait_s"] + a1["followup_ms"] / 1000, abs=1e-3)

    (skipped,) = [r for r in cases["D1"].result if isinstance(r, Skipped)]
    assert skipped.message.startswith("disabled: ") and "intraday" in skipped.message
    assert cases["D1"].classname == "obai-e2e.strategy"


def test_hostile_and_control_characters_stay_valid(schema, run_copy):
    results = make_hostile(run_copy)
    results["units"][0]["judgment"] = "bell \x07 nul \x00 esc \x1b ok; pa\u202egnp.exe zero\u200bwidth"
    results["units"][0]["verdict"] = "fail"
    results["units"][0]["reasons"] = ["x\x01y"]
    data = render(results)
    schema.validate(data.decode("utf-8"))
    text = data.decode("utf-8")
    assert "\x00" not in text and "\x07" not in text and "<img" not in text
    case = next(iter(only_suite(JUnitXml.fromstring(data))))
    (failure,) = case.result
    assert failure.message == "x\ufffdy"
    assert "bell \ufffd nul \ufffd esc \ufffd ok; pa<U+202E>gnp.exe zero<U+200B>width" in failure.text
    assert "\u202e" not in text and "\u200b" not in text
    assert f"query: {ALL}" in failure.text and SCRIPT_BREAK in failure.text


def test_not_judged_is_skipped_and_write_is_idempotent(schema, run_copy):
    results = load(run_copy)
    results["units"][0]["verdict"] = "not_judged"
    data = render(results)
    schema.validate(data.decode("utf-8"))
    suite = only_suite(JUnitXml.fromstring(data))
    assert suite.skipped == 2  # the not-judged unit and D1

    first = write_junit(run_copy)
    path = Path(first["junit_xml"])
    mtime = path.stat().st_mtime_ns
    assert write_junit(run_copy) == first and path.stat().st_mtime_ns == mtime


def test_the_file_holds_the_same_bytes_as_one_rendered_from_whole_units(run_copy):
    # write_junit reads only UNIT_FIELDS of each unit; what it writes must not depend on that.
    for hostile in (False, True):
        results = make_hostile(run_copy) if hostile else load(run_copy)  # make_hostile saves its rewrite
        assert any(u.get("rule_outcomes") for u in results["units"])  # there was more to leave out
        (run_copy / "results.junit.xml").unlink(missing_ok=True)
        write_junit(run_copy)
        features = {c.id: c.feature for c in cases_for_run(results, run_copy).cases}
        assert (run_copy / "results.junit.xml").read_bytes() == render(results, features=features)
    assert set(UNIT_FIELDS) < set(results["units"][0])


def test_each_test_case_is_written_as_elementtree_writes_the_whole_indented_suite(run_copy):
    """The suite is written a test case at a time; its bytes are those of the one tree, indented."""
    import xml.etree.ElementTree as ET

    results = load(run_copy)
    results["units"][1]["judgment"] = "P/E < 30 & \"quoted\" <b>bold</b>"
    results["units"].append({**results["units"][0], "unit_id": "X9", "verdict": "not_judged"})
    data = render(results, features={"D1": "disabled_feature"})
    tree = ET.fromstring(data)
    for elem in tree.iter():  # drop the layout; ElementTree lays the tree out again
        if elem.text is not None and not elem.text.strip():
            elem.text = None
        elem.tail = None
    ET.indent(tree, space="  ")
    assert ET.tostring(tree, encoding="utf-8", xml_declaration=True) + b"\n" == data
    assert len(tree.findall("testcase")) == len(results["units"]) + len(results["disabled"])
    assert tree.get("tests") == str(len(results["units"]) + len(results["disabled"]))
