"""``adopt`` on traces a hostile agent wrote: nothing in a span name, a question or an error can add
a line, a key or a case to the draft, a name is never read as a pattern, and a draft that would
not load is never left behind.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from obai_e2e.base.errors import ConfigError
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config

from .test_draft import GRAPH, GRAPH_CLEAN, chosen, run, tree, verdicts

INJECTED = 'tools"\n  - id: X\n    feature: general\n    query: pwned\n    env: {BASH_ENV: /tmp/evil}\n#'


def graph(names=GRAPH_CLEAN):
    return [tree(GRAPH, n) for n in names]


def renamed(samples, old: str, new: str):
    for s in samples:
        for sp in s.spans:
            if sp["name"] == old:
                sp["name"] = new
    return samples


def loaded(summary: dict):
    config = load_target_config(Path(summary["target"]))
    return config, load_cases_for(config, Path(summary["cases"])).cases


def test_a_line_break_in_an_error_spans_name_adds_no_case(tmp_path):
    samples = renamed(graph(["price_feed_down", "refused"]), "tools", INJECTED)
    summary = run(tmp_path, samples, refusal_exit_code=3)
    _, cases = loaded(summary)
    assert [c.id for c in cases] == ["T1", "T2"]
    assert all(not c.env for c in cases)
    text = Path(summary["cases"]).read_text()
    assert "BASH_ENV" in text and all(line.startswith(("#", "  #", "version", "cases", "  - ", "    "))
                                      for line in text.splitlines())
    assert not any(line.lstrip().startswith("env:") for line in text.splitlines())


@pytest.mark.parametrize("name", ["re:.*|screen", "guard*", "screen{name}"])
def test_a_span_name_that_looks_like_a_pattern_is_drafted_as_that_exact_name(tmp_path, name):
    summary = run(tmp_path, renamed(graph(), "screen", name), refusal_exit_code=3)
    config, _ = loaded(summary)
    assert chosen(summary)["vocabulary.guardrail_span"].startswith("re:")
    assert config.vocabulary.guardrail.matches(name)
    for other in ("quote_lookup", "agent", "load_playbook", "guard", "screen"):
        assert not config.vocabulary.guardrail.matches(other)
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)


@pytest.mark.parametrize("sep", ["\u2028", "\u0085", "\u2029", "\x0b"])
def test_a_question_with_a_line_separator_is_kept_or_left_out_whole(tmp_path, sep):
    samples = graph(["price", "financials", "refused"])
    question = f"How is Apple{sep}trading today?"
    samples[0].trace["input"]["question"] = question
    for m in samples[0].trace["input"].get("messages", []):
        m["content"] = question
    summary = run(tmp_path, samples, refusal_exit_code=3)
    _, cases = loaded(summary)
    queries = [c.query for c in cases]
    if sep in ("\u2028", "\u2029"):  # allowed in a query: kept exactly, not folded
        assert queries[0] == question
    else:  # a control character cases.yaml refuses: that case is left out, and said to be
        assert question not in queries and len(queries) == 2
        assert any("write that case by hand" in u["next_step"] for u in summary["undecided"])


def test_a_tool_name_with_a_line_break_leaves_a_loadable_draft(tmp_path):
    samples = renamed(graph(), "quote_lookup", "quote\nlookup: 1")
    summary = run(tmp_path, samples, refusal_exit_code=3)
    config, cases = loaded(summary)
    assert "quote\nlookup: 1" not in config.vocabulary.specialists
    assert any("control characters" in u["why"] for u in summary["undecided"])
    assert all("quote\nlookup: 1" not in (c.expected_tools or ()) for c in cases)


def test_a_draft_that_does_not_load_leaves_nothing_behind(tmp_path):
    samples = graph(["price", "refused"])
    for s in samples:  # no question anywhere: nothing to draft a case from
        s.trace["input"] = {}
    out = tmp_path / "draft"
    with pytest.raises(ConfigError, match="adopt wrote nothing"):
        run(out, samples, refusal_exit_code=3)
    assert not out.exists()
    out.mkdir()
    with pytest.raises(ConfigError):
        run(out, samples, refusal_exit_code=3)
    assert list(out.iterdir()) == []


def test_comments_show_control_characters_escaped(tmp_path):
    samples = renamed(graph(), "screen", "screen\x1b[2J\u202e")
    summary = run(tmp_path, samples, refusal_exit_code=3)
    text = Path(summary["target"]).read_text()
    assert "\x1b" not in text and "\u202e" not in text
    assert "screen\\x1b[2J\\u202e" in text
    assert yaml.safe_load(text)["vocabulary"]["guardrail_span"].startswith("re:")


def test_a_key_with_a_line_break_in_a_guardrails_output_is_never_pointed_at(tmp_path):
    samples = graph()
    for s in samples:
        for sp in s.spans:
            if sp["name"] == "screen":
                sp["output"] = {"x\n.allowed": sp["output"]["screen"]["verdict"], **sp["output"]}
    summary = run(tmp_path, samples, refusal_exit_code=3)
    assert chosen(summary)["vocabulary.guardrail_allowed_field"] == "/output/screen/verdict"
    loaded(summary)


def test_a_shared_tool_prefix_that_looks_like_a_pattern_is_drafted_as_that_literal_prefix(tmp_path):
    samples = graph()
    for old in ("quote_lookup", "company_financials", "option_payoff"):
        renamed(samples, old, f"re:*.{old}")
    summary = run(tmp_path, samples, refusal_exit_code=3)
    config, _ = loaded(summary)
    assert chosen(summary)["vocabulary.specialist_span"].startswith("re:")
    assert config.vocabulary.specialist_name("re:*.quote_lookup", "tool") == "quote_lookup"
    assert config.vocabulary.specialist_name("re:x.quote_lookup", "tool") is None
    assert config.vocabulary.specialist_name("quote_lookup", "tool") is None
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)
