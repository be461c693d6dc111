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


# Line and paragraph separators, control characters, quotes, backslashes, invisible and format characters.
ASKED = ["\u2028", "\u0085", "\u2029", "\x0b", "\x0c", "\x1c", "\x1e", "\r", "\r\n", "\n", "\t", "\x1b[2J", "\x07",
         "\x7f", "\x9b", "\x01", '"quoted"', "it's", "back\\slash", "\u200b", "\u202e", "\ufeff", "\u00a0",
         "\ue000", "\U0001F600", "# not a comment", ": not a key", "- not an item", "\\N \\L \\x85 \\e"]


def asked(samples, question: str):
    samples[0].trace["input"]["question"] = question
    for m in samples[0].trace["input"].get("messages", []):
        m["content"] = question
    return samples


@pytest.mark.parametrize("part", ASKED, ids=lambda p: p.encode("unicode_escape").decode("ascii"))
def test_a_question_reaches_the_starter_cases_exactly_as_asked(tmp_path, part):
    question = f"How is Apple{part}trading today?"
    summary = run(tmp_path, asked(graph(["price", "financials", "refused"]), question), refusal_exit_code=3)
    _, cases = loaded(summary)
    assert cases[0].query.encode("utf-8") == question.encode("utf-8")  # byte for byte, nothing folded or lost
    assert len(cases) == 3 and not any("question" in u["why"] for u in summary["undecided"])
    text = Path(summary["cases"]).read_text(encoding="utf-8")
    assert all(ch not in text for ch in "\x85\u2028\u2029\x0b\x1b\u202e\u200b\ufeff\r")  # shown as escapes
    assert [line for line in text.splitlines() if "query:" in line][0].startswith('    query: "')


def test_a_question_no_case_can_hold_is_left_out_and_said_to_be(tmp_path):
    summary = run(tmp_path, asked(graph(["price", "financials", "refused"]), "How is\x00Apple?"), refusal_exit_code=3)
    _, cases = loaded(summary)
    assert len(cases) == 2 and all("\x00" not in c.query for c in cases)
    left = [u for u in summary["undecided"] if "U+0000" in u["why"]]
    assert left and left[0]["next_step"] == "write that case by hand, or leave it out"


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


def test_every_character_but_nul_and_surrogates_loads_back_from_the_drafted_yaml(tmp_path):
    from obai_e2e.adopt.yamltext import scalar
    from obai_e2e.base.yamlio import load_yaml_doc

    chars = [chr(c) for c in (*range(1, 0x250), *range(0x2000, 0x2070), 0xFEFF, 0xFFF9, 0xFFFC, 0xFFFD, 0xFFFE, 0xFFFF,
                              0xE000, 0xF8FF, 0x1F600, 0xE0001, 0x10FFFF)]
    lines = [f"q{i}: {scalar('a' + ch + 'b')}" for i, ch in enumerate(chars)]
    path = tmp_path / "q.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = load_yaml_doc(path, label=str(path)).data
    assert [data[f"q{i}"] for i in range(len(chars))] == ["a" + ch + "b" for ch in chars]
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(chars)  # no value took a second line
