"""A YAML document built a top-level list item at a time gives what composing it whole gives."""
from __future__ import annotations

import tracemalloc

import pytest
import yaml
from obai_e2e.base import yamlio
from obai_e2e.base.errors import ConfigError

from .test_yamlio import PARSERS, write


def whole(path, libyaml: bool):
    """The document composed whole into nodes, checked, then built (the reference)."""
    raw = path.read_bytes()
    loader = yamlio._Loader(raw) if libyaml else yamlio._PureLoader(raw.decode("utf-8"))
    checker = yamlio._Checker(loader, str(path), pure=not libyaml)
    node = loader.get_single_node()
    checker.visit(node, (), 0)
    data = loader.construct_document(node)
    loader.dispose()
    return data, checker.lines, checker.numbers, checker.yaml11_bools


TRICKY = """\
version: 1
defaults: &defaults {feature: f, labels: {intent: x}}
cases:
  - &first {id: A, query: "a", <<: *defaults, n: 0x1F}
  - id: B
    query: b
    <<: *defaults
    when: 2026-01-01
    ratio: 1.50
  - *first
  - [nested, {list: [1, 2.0, yes]}]
  - id: C
    tags: &tags [p, q]
    again: *tags
empty: []
scalar: text
"""


@pytest.mark.parametrize("libyaml", PARSERS)
def test_anchors_merges_and_numbers_across_items_come_out_as_composed_whole(tmp_path, libyaml):
    path = write(tmp_path, TRICKY)
    doc = yamlio.load_yaml_doc(path, libyaml=libyaml)
    assert (doc.data, doc.lines, doc.numbers, doc.yaml11_bools) == whole(path, libyaml)
    assert doc.data["cases"][2] == doc.data["cases"][0] and doc.lines[("cases", 1, "ratio")] == 9


@pytest.mark.parametrize("libyaml", PARSERS)
def test_a_top_level_merge_key_is_read_whole(tmp_path, libyaml):
    path = write(tmp_path, "base: &b {x: 1}\n<<: *b\nitems: [1, 2]\n")
    doc = yamlio.load_yaml_doc(path, libyaml=libyaml)
    assert doc.data == {"base": {"x": 1}, "x": 1, "items": [1, 2]}
    assert (doc.data, doc.lines, doc.numbers) == whole(path, libyaml)[:3]


@pytest.mark.parametrize("libyaml", PARSERS)
def test_a_syntax_error_later_in_the_file_is_reported_before_an_earlier_duplicate_key(tmp_path, libyaml):
    path = write(tmp_path, "cases:\n  - {id: A, id: B}\n  - id: C\n    query: [unclosed\n")
    assert "not valid YAML" in str(pytest.raises(ConfigError, yamlio.load_yaml_doc, path, libyaml=libyaml).value)
    path = write(tmp_path, "cases:\n  - {id: A, id: B}\n  - id: C\n")
    message = str(pytest.raises(ConfigError, yamlio.load_yaml_doc, path, libyaml=libyaml).value)
    assert "duplicate key 'id'" in message and f"{path}:2" in message


def test_the_nodes_of_one_item_at_a_time_are_held(tmp_path):
    """A long list costs its data, not its nodes: well under the nodes' 6 KB a case."""
    case = "  - id: C{i}\n    feature: market_data\n    query: What is the latest price of AAPL? ({i})\n" \
           "    expected_skills: [market-data]\n    expected_tools: [market_data_analysis]\n" \
           "    labels: {{intent: price_lookup}}\n"
    n = 3000
    path = write(tmp_path, "version: 1\ncases:\n" + "".join(case.format(i=i) for i in range(n)))
    tracemalloc.start()
    try:
        doc = yamlio.load_yaml_doc(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(doc.data["cases"]) == n
    assert peak / n < 4000, f"{peak / n:.0f} bytes a case"
    yaml.safe_load(path.read_text())  # the file is plain YAML


def test_a_cases_file_is_read_with_the_cases_lines_only_and_a_problem_with_every_line(tmp_path):
    from obai_e2e.config.cases import load_cases

    text = "version: 1\ncases:\n  - id: A\n    feature: f\n    query: q\n    labels:\n      intent: [no, string]\n"
    path = write(tmp_path, text)
    lean = yamlio.load_yaml_doc(path, line_depth=2)
    assert lean.lines[("cases", 0)] == 3 and ("cases", 0, "labels", "intent") not in lean.lines
    assert yamlio.load_yaml_doc(path).lines[("cases", 0, "labels", "intent")] == 7
    message = str(pytest.raises(ConfigError, load_cases, path).value)
    assert f"{path}:7" in message and "labels/intent" in message  # the field's own line, read again
    good = write(tmp_path, text.replace("[no, string]", "x"), "good.yaml")
    assert load_cases(good).cases[0].line == 3
