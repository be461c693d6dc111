"""results.junit.xml: the run as one JUnit test suite, for CI dashboards.

One ``<testsuite name="obai-e2e">`` with one ``<testcase classname="obai-e2e.<feature>"
name="<unit>">`` per unit, ``time`` = the unit's latency in seconds (initial + wait +
follow-up for async cases). Verdicts map as follows:

* ``fail`` → ``<failure message=type=<first code>>`` with the judgment, expected and
  observed as text;
* ``inconclusive`` → ``<error message=type=<reason>>``: the harness or the trace
  backend could not decide, which CI should show apart from a regression;
* ``needs_review`` → a passing test case with a ``<system-out>`` naming the soft codes.
  Soft rules ask a person to look; failing CI on them would turn every soft rule into a
  hard one, and the rubric says they are not failures;
* ``not_judged`` (a run finished with ``--allow-incomplete``) → ``<skipped>``;
* disabled cases listed in results.json → a test case with ``<skipped message="disabled:
  <reason>">``.

The file validates against the JUnit result schema the tests carry (tests/report/junit-results.xsd) and is
deterministic for a given results.json. It is written a test case at a time, each as ElementTree writes
it inside the indented suite, so a run of any size is never one tree in memory.
"""
from __future__ import annotations

import io
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import BinaryIO, Iterable

from ..base.fsutil import replace_from
from ..base.invisible import reveal
from .html_inputs import cases_for_run, results_rows

JUNIT_NAME = "results.junit.xml"
SUITE_NAME = "obai-e2e"
# Characters XML 1.0 cannot carry at all (C0 controls other than tab/newline/CR, surrogates, FFFE/FFFF).
_INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# The fields of a unit the file shows (the units are read one at a time; the others are not kept).
UNIT_FIELDS = ("unit_id", "feature", "latency", "verdict", "reasons", "judgment", "expected", "observed",
               "query", "trace_ids", "not_asked")
DECLARATION = b"<?xml version='1.0' encoding='utf-8'?>\n"
INDENT = "\n  "


def xml_text(value: object) -> str:
    """Text XML can carry, with invisible characters written as ``<U+XXXX>``."""
    return reveal(_INVALID_XML.sub("\ufffd", "" if value is None else str(value)))


def unit_seconds(latency: dict | None) -> float:
    lat = latency or {}
    total = (lat.get("turn_ms") or 0) / 1000.0 + float(lat.get("wait_s") or 0) + (lat.get("followup_ms") or 0) / 1000.0
    return round(total, 3)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _timestamp(created_at: str | None) -> str | None:
    # JUnit consumers expect second precision without a zone; the run's own clock is UTC.
    return created_at[:19] if created_at and len(created_at) >= 19 else None


def _details(entry: dict) -> str:
    lines = [entry.get("judgment") or "",
             f"expected: {entry.get('expected') or ''}",
             f"observed: {entry.get('observed') or ''}",
             f"query: {entry.get('query') or ''}"]
    traces = [t for t in entry.get("trace_ids") or [] if t]
    if traces:
        lines.append(f"trace: {' → '.join(traces)}")
    return xml_text("\n".join(lines))


def _case_features(results: dict, run_dir: Path, case_set=None) -> dict[str, str]:
    if not results.get("disabled"):
        return {}
    if case_set is None:
        case_set = cases_for_run(results, run_dir)
    wanted = {str(d.get("id", "")) for d in results["disabled"]}
    return {c.id: c.feature for c in case_set.cases if c.id in wanted} if case_set is not None else {}


def _not_asked(entry: dict) -> str:
    """The line that names a unit's judgment questions no judge was asked ("" without any)."""
    missing = [str(q) for q in entry.get("not_asked") or []]
    return f"not asked (no judge: undecided, not passed): {', '.join(missing)}\n" if missing else ""


def _suite_start(run: dict, counts: dict, tests: int) -> bytes:
    """``<testsuite ...>`` with its attributes, as ElementTree writes the start tag of the whole suite."""
    suite = ET.Element("testsuite")
    suite.set("name", SUITE_NAME)
    suite.set("tests", str(tests))
    suite.set("failures", str(counts["fail"]))
    suite.set("errors", str(counts["inconclusive"]))
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", _seconds(float(run.get("duration_s") or 0)))
    stamp = _timestamp(run.get("created_at"))
    if stamp:
        suite.set("timestamp", stamp)
    if run.get("run_id"):
        suite.set("id", xml_text(run["run_id"]))
    suite.text = INDENT
    return ET.tostring(suite, encoding="utf-8")[:-len(b"</testsuite>")]


def _properties(run: dict, unasked: int) -> ET.Element:
    props = ET.Element("properties")
    target = run.get("target") or {}
    for name, value in (("run_id", run.get("run_id")), ("target", target.get("name")),
                        ("target_version", target.get("version")), ("git_commit", run.get("git_commit")),
                        ("mode", run.get("mode")), ("provenance", run.get("provenance")),
                        ("catalog_version", run.get("catalog_version"))):
        if value:
            ET.SubElement(props, "property", {"name": name, "value": xml_text(value)})
    ET.SubElement(props, "property", {"name": "judgment_questions_not_asked", "value": str(unasked)})
    return props


def _testcase(e: dict) -> ET.Element:
    case = ET.Element("testcase")
    case.set("classname", xml_text(f"{SUITE_NAME}.{e.get('feature', '')}"))
    case.set("name", xml_text(e.get("unit_id", "")))
    case.set("time", _seconds(unit_seconds(e.get("latency"))))
    verdict = e.get("verdict")
    reasons = [str(r) for r in e.get("reasons") or []]
    if verdict == "fail":
        code = xml_text(reasons[0] if reasons else "fail")
        ET.SubElement(case, "failure", {"message": code, "type": code}).text = _details(e)
    elif verdict == "inconclusive":
        reason = xml_text(reasons[0] if reasons else "inconclusive")
        ET.SubElement(case, "error", {"message": reason, "type": reason}).text = _details(e)
    elif verdict == "needs_review":
        ET.SubElement(case, "system-out").text = xml_text(
            f"needs_review (soft, not a failure): {', '.join(reasons)}\n{_not_asked(e)}{_details(e)}")
    elif verdict == "not_judged":
        ET.SubElement(case, "skipped", {"message": "not judged (run finished with --allow-incomplete)"})
    elif e.get("not_asked"):
        ET.SubElement(case, "system-out").text = xml_text(f"pass by the rules; {_not_asked(e)}{_details(e)}")
    return case


def _disabled_case(d: dict, features: dict[str, str]) -> ET.Element:
    cid = str(d.get("id", ""))
    case = ET.Element("testcase")
    case.set("classname", xml_text(f"{SUITE_NAME}.{features.get(cid, 'disabled')}"))
    case.set("name", xml_text(cid))
    case.set("time", _seconds(0))
    reason = d.get("reason") or "no reason given"
    ET.SubElement(case, "skipped", {"message": xml_text(f"disabled: {reason}")})
    return case


def _child(elem: ET.Element) -> bytes:
    """A child of the suite as ElementTree writes it inside the indented suite, without its tail."""
    holder = ET.Element("testsuite")
    holder.append(elem)
    ET.indent(holder, space="  ")
    elem.tail = None
    return ET.tostring(elem, encoding="utf-8")


def write_suite(fh: BinaryIO, run: dict, units: Iterable[dict], disabled: list[dict],
                features: dict[str, str] | None = None) -> None:
    """The file for a run's head (``run``, ``disabled``) and its units, streamed into ``fh``: the test cases
    go to a scratch file first, since the suite's counts come before them."""
    features = features or {}
    counts = {"fail": 0, "inconclusive": 0, "skipped": len(disabled)}
    tests = unasked = 0
    with tempfile.TemporaryFile() as spool:
        for e in units:
            v = e.get("verdict")
            if v in ("fail", "inconclusive"):
                counts[v] += 1
            elif v == "not_judged":
                counts["skipped"] += 1
            unasked += len(e.get("not_asked") or ())
            tests += 1
            spool.write(INDENT.encode() + _child(_testcase(e)))
        for d in disabled:
            spool.write(INDENT.encode() + _child(_disabled_case(d, features)))
        fh.write(DECLARATION + _suite_start(run, counts, tests + len(disabled)))
        fh.write(_child(_properties(run, unasked)))
        spool.seek(0)
        shutil.copyfileobj(spool, fh, 1 << 20)
    fh.write(b"\n</testsuite>\n")


def render(results: dict, *, features: dict[str, str] | None = None) -> bytes:
    """The file for ``results`` held in memory (a loaded results.json)."""
    out = io.BytesIO()
    write_suite(out, results.get("run") or {}, results.get("units") or [], results.get("disabled") or [], features)
    return out.getvalue()


def write_junit(run_dir: Path, *, case_set=None) -> dict:
    """Write ``run_dir/results.junit.xml`` from its results.json, a unit at a time (unchanged bytes are not
    rewritten)."""
    run_dir = Path(run_dir)
    head, units = results_rows(run_dir / "results.json")
    path = run_dir / JUNIT_NAME
    replace_from(path, lambda fh: write_suite(fh, head.get("run") or {}, units, head.get("disabled") or [],
                                              _case_features(head, run_dir, case_set)))
    return {"junit_xml": str(path), "bytes": path.stat().st_size}
