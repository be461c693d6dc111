"""Span-name patterns, JSON pointers, error shapes and the code grammar, on small vectors."""
from __future__ import annotations

import re

import pytest
from obai_e2e.base import jsonptr
from obai_e2e.config.shapes import ErrorShape, span_pattern, suspect_error
from obai_e2e.judge.rubric import codes


@pytest.mark.parametrize("pattern,name,expected", [
    ("policy.check", "policy.check", (True, None)),
    ("policy.check", "policy_check", (False, None)),         # exact: '.' is no wildcard
    ("agent:{name}", "agent:quotes", (True, "quotes")),
    ("agent:{name}", "agent:fx.rates:v2", (True, "fx.rates:v2")),
    ("agent:{name}", "agent:", (False, None)),
    ("agent:{name}", "agent:two words", (False, None)),
    ("agent:{name}", "xagent:quotes", (False, None)),      # the whole name must match
    ("tool.*", "tool.search", (True, None)),
    ("*/{name}/run", "team/desk-1/run", (True, "desk-1")),
    ("re:^(?:agent|desk):(?P<name>[a-z]+)$", "desk:fx", (True, "fx")),
    ("re:^load_", "load_skill", (False, None)),            # re: patterns match the whole name too
    ("re:load_.*", "load_skill", (True, None)),
])
def test_span_patterns(pattern, name, expected):
    assert span_pattern(pattern).match(name) == expected


@pytest.mark.parametrize("pattern,says", [
    ("agent:{desk}", "the only placeholder is {name}"),
    ("{name}:{name}", "{name} may appear once"),
    ("agent:{name", "unbalanced brace"),
    ("re:(", "not a valid regular expression"),
])
def test_bad_span_patterns(pattern, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        span_pattern(pattern)


def test_json_pointers():
    doc = {"a": {"b/c": [10, {"~k": "v"}]}, "": 1}
    assert jsonptr.resolve(doc, "/a/b~1c/0") == 10
    assert jsonptr.resolve(doc, "/a/b~1c/1/~0k") == "v"
    assert jsonptr.resolve(doc, "/") == 1 and jsonptr.resolve(doc, "") == doc
    for missing in ("/x", "/a/b~1c/2", "/a/b~1c/01", "/a/b~1c/-", "/a/b~1c/0/x"):
        assert jsonptr.resolve(doc, missing) is jsonptr.MISSING
    with pytest.raises(ValueError, match="must be empty or start with '/'"):
        jsonptr.parse("a/b")
    with pytest.raises(ValueError, match="~0"):
        jsonptr.parse("/a~2")


@pytest.mark.parametrize("shape,output,found", [
    (ErrorShape("/status", equals="error", message="/detail"), {"status": "error", "detail": "timeout"}, "timeout"),
    (ErrorShape("/status", equals="error"), {"status": "ok"}, None),
    (ErrorShape("/status", equals="error"), {"detail": "x"}, None),
    (ErrorShape("/code", equals=500), {"code": 500.0}, "/code == 500"),
    (ErrorShape("/failed", equals=True), {"failed": 1}, None),                    # true is not 1
    (ErrorShape("/state", matches=re.compile("^(failed|aborted)$")), {"state": "aborted"}, "/state matches '^(failed|aborted)$'"),
    (ErrorShape("/error_code", present=True), {"error_code": None}, None),
    (ErrorShape("/error_code", present=True), {"error_code": "E1"}, "/error_code is present"),
    (ErrorShape("/result", present=False), {"status": "x"}, "/result is absent"),
])
def test_error_shapes(shape, output, found):
    assert shape.test(output) == found


@pytest.mark.parametrize("output,suspect", [
    ({"ok": False, "reason": "rate limited"}, "ok: false"),
    ({"success": False}, "success: false"),
    ({"status": "Failed"}, "status: Failed"),
    ({"errors": ["x"]}, "errors is set"),
    ({"status": "queued", "errors": []}, None),
    ({"content": [{"type": "text", "text": "fine"}], "isError": False}, None),
    ("error", None),
])
def test_suspect_error_shapes(output, suspect):
    assert suspect_error(output) == suspect


@pytest.mark.parametrize("code", [
    "specialist.agent:quotes.tool_error", "specialist.fx%2Erates.empty", "specialist.options.empty",
    "specialist.strategy.tool_error", "trace.error_span:agent:quotes", "hub.unverified_number:1,234.50",
])
def test_names_the_cases_schema_admits_make_valid_codes(code):
    assert codes.is_hard(code) or codes.is_soft(code)
    assert codes.explain(code) is None


@pytest.mark.parametrize("code,says", [
    ("specialist.agent:quotes.tool_eror", "after the specialist name 'agent:quotes' comes '.empty' or '.tool_error', not 'tool_eror'"),
    ("specialist.options.maths", "after 'specialist.options.' comes one of math, empty, tool_error, not 'maths'"),
    ("specialist.agent quotes.empty", "contains white space"),
    ("specialist.a/b.empty", "the specialist name 'a/b' may only have letters, digits, _ : - and %-escapes"),
    ("specialist.fx.rates.empty", "the specialist name 'fx.rates' may only have letters, digits, _ : - and "
                                  "%-escapes (a dot is written %2E)"),
    ("routing.skil_missing", "'skil_missing' is not a routing code"),
    ("trace.error:x", "after 'trace.' comes 'error_span:<span name>'"),
    ("hub.unverified_number", "write hub.unverified_number:<value>"),
    ("speciallist.x.empty", "starts with 'speciallist'"),
])
def test_a_bad_code_says_which_part_is_wrong(code, says):
    message = codes.explain(code)
    assert says in message and len(message) < 360  # one sentence; the reasons listed grow with the vocabulary


@pytest.mark.parametrize("name,fit", [("agent:quotes", "agent:quotes"), ("fx.rates", "fx%2Erates"),
                                      ("Agent Executor", "Agent%20Executor"), ("", "unnamed")])
def test_specialist_names_in_codes(name, fit):
    """Colons stay (names the cases schema admits); dots and anything else are percent-encoded."""
    assert codes.specialist_name(name) == fit
    assert codes.is_hard(f"specialist.{codes.specialist_name(name)}.tool_error")
    assert codes.is_hard(f"trace.error_span:{codes.code_name(name)}")
