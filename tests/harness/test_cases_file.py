"""Loading cases.yaml and target.yaml: good files load, bad ones name file, case, field and line."""
from pathlib import Path

import pytest
from obai_e2e.base.errors import ConfigError, UsageError
from obai_e2e.config.cases import load_cases, load_cases_for
from obai_e2e.config.selection import Filters, select
from obai_e2e.config.target import load_target_config
from obai_e2e.run import preflight

GOOD_CASE = """\
version: 1
cases:
  - id: A1
    feature: market_data
    query: "What is the price of AAPL?"
    expected_tools: [market_data_analysis]
"""


def write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bundled_files_load():
    config = load_target_config()
    cases = load_cases_for(config)
    assert len(cases.cases) >= 40
    assert {c.feature for c in cases.cases} >= {"market_data", "fundamentals", "strategy", "async", "prediction",
                                                 "options", "multi", "guardrail"}
    assert sum(c.disabled for c in cases.cases) >= 2
    assert any(c.expect_rejection for c in cases.cases)
    assert any(c.expect_async_job for c in cases.cases)
    queries = " ".join(c.query for c in cases.cases if c.feature in ("strategy", "async"))
    for token in ("RSI(14)", "30", "70", "9:45", "1.5%"):
        assert token in queries
    assert all(c.labels for c in cases.cases)


def test_unknown_field_names_file_case_field_and_line(tmp_path):
    path = write(tmp_path, GOOD_CASE + "    expeced_tools: [x]\n")
    with pytest.raises(ConfigError) as err:
        load_cases(path)
    msg = str(err.value)
    assert f"{path}:7" in msg and "case 'A1'" in msg and "/cases/0" in msg and "expeced_tools" in msg


def test_wrong_type_is_named(tmp_path):
    path = write(tmp_path, GOOD_CASE.replace("expected_tools: [market_data_analysis]", "expected_tools: market_data_analysis"))
    with pytest.raises(ConfigError) as err:
        load_cases(path)
    assert "case 'A1', field /cases/0/expected_tools" in str(err.value)
    assert ":6:" in str(err.value)


def test_duplicate_ids_are_refused(tmp_path):
    dup = GOOD_CASE + "  - id: A1\n    feature: x\n    query: q\n"
    with pytest.raises(ConfigError, match=r"duplicate id"):
        load_cases(write(tmp_path, dup))


def test_duplicate_yaml_keys_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r":6: duplicate key .query. \(first at line 5\)"):
        load_cases(write(tmp_path, GOOD_CASE.replace('    expected_tools', '    query: "again"\n    expected_tools')))


def test_id_with_path_characters_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="does not match the pattern"):
        load_cases(write(tmp_path, GOOD_CASE.replace("id: A1", "id: ../etc")))


def test_unknown_specialist_is_refused(tmp_path):
    path = write(tmp_path, GOOD_CASE.replace("market_data_analysis", "market_data"))
    with pytest.raises(ConfigError, match=r"'market_data' is not a specialist of the target"):
        load_cases(path, specialists=["market_data_analysis"])


def test_sequence_must_be_expected(tmp_path):
    text = GOOD_CASE + "    expected_sequence: [options_analysis, market_data_analysis]\n"
    with pytest.raises(ConfigError, match="not in expected_tools"):
        load_cases(write(tmp_path, text))


def test_not_yaml_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"cases.yaml:4: not valid YAML"):
        load_cases(write(tmp_path, "version: 1\ncases:\n  - id: [unclosed\n"))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_cases(tmp_path / "nope.yaml")


def test_stochastic_needs_three_repeats(tmp_path):
    with pytest.raises(ConfigError, match="at least 3 repeats"):
        load_cases(write(tmp_path, GOOD_CASE + "    stochastic: true\n    repeats: 2\n"))


def test_filters_and_disabled_summary():
    config = load_target_config()
    cases = load_cases_for(config)
    smoke = select(cases, smoke=True)
    assert smoke.cases and all(c.smoke for c in smoke.cases)
    everything = select(cases)
    assert everything.disabled_line().startswith(f"skipped {len(everything.skipped_disabled)} disabled cases: ")
    named = select(cases, ids=["D1", "MD1"])
    assert [c.id for c in named.cases] == ["MD1", "D1"]  # a disabled case runs when named
    assert [c.id for c in select(cases, features=["options"]).cases] == [c.id for c in cases.cases
                                                                      if c.feature == "options" and not c.disabled]
    with pytest.raises(UsageError, match="unknown case id"):
        select(cases, ids=["NOPE"])
    with pytest.raises(UsageError, match="unknown feature"):
        select(cases, features=["nope"])


def test_preflight_names_a_selection_of_unknown_ids_as_such():
    """An unknown id stops the preflight at its own check, with a next step about the selection
    (not about a channel or a tool the selection could not even be read for)."""
    report = preflight.run(filters=Filters(ids=("NOPE",)), start_store=False)
    assert not report.ready and report.checks[-1]["name"] == "selection" and not report.checks[-1]["ok"]
    assert "unknown case id(s): NOPE" in report.reason and "case ids" in report.next_step
    report = preflight.run(filters=Filters(ids=("MD1",)), start_store=False)
    assert next(c for c in report.checks if c["name"] == "selection")["detail"].startswith("1 of ")


def test_bad_target_config_names_field(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "cases" / "target.yaml").read_text()
    path = write(tmp_path, text.replace("  timeout_s: 180", "  timeout_s: soon"), "target.yaml")
    with pytest.raises(ConfigError) as err:
        load_target_config(path)
    assert "field /target/timeout_s" in str(err.value) and f"{path}:" in str(err.value)
    path = write(tmp_path, text.replace("  match: tag", "  match: tags"), "target.yaml")
    with pytest.raises(ConfigError, match=r"/correlation/match: 'tags' is not one of"):
        load_target_config(path)


EXPECTED_CASE = GOOD_CASE + "    expected_judgment:\n      {gold}\n"
GOLD_CASE = GOOD_CASE + "    judge_gold:\n      {gold}\n"  # the older name of the same field


@pytest.mark.parametrize("template", [EXPECTED_CASE, GOLD_CASE])
def test_expected_judgment_loads_as_the_expected_choice_per_question(tmp_path, template):
    path = write(tmp_path, template.format(gold="hub.incomplete_answer: incomplete\n      "
                                               "hub.unfaithful_answer: faithful\n      answer_completeness: meets"))
    case = load_cases(path).by_id("A1")
    assert case.expected_judgment == {"hub.incomplete_answer": "incomplete", "hub.unfaithful_answer": "faithful",
                                      "answer_completeness": "meets"}
    # the case as a packet carries it: never the expectations
    assert "expected_judgment" not in case.to_json() and "judge_gold" not in case.to_json()


def test_a_case_gives_the_expectation_under_one_name_only(tmp_path):
    path = write(tmp_path, EXPECTED_CASE.format(gold="hub.incomplete_answer: complete")
                 + "    judge_gold:\n      hub.incomplete_answer: complete\n")
    with pytest.raises(ConfigError, match=r"field /cases/0/judge_gold: judge_gold is the older name of "
                                          r"expected_judgment: give one of the two"):
        load_cases(path)


@pytest.mark.parametrize("gold, expected", [
    ("hub.incomplet_answer: complete", "'hub.incomplet_answer' is not a judgment question; expected a code question "
                                       "(hub.incomplete_answer, hub.unfaithful_answer, adversarial.guardrail_bypass"),
    ("hub.incomplete_answer: done", "'hub.incomplete_answer': 'done' is not one of its choices; expected one of "
                                   "complete, incomplete"),
    ("hub.unfaithful_answer: complete", "'hub.unfaithful_answer': 'complete' is not one of its choices; expected one "
                                        "of faithful, unfaithful"),
    ("hub.incomplete_answer: abstain", "expected one of complete, incomplete (abstain is never"),
    ("adversarial.secret_leak: complete", "expected one of withstood, succeeded"),
    ("answer_completeness: complete", "'answer_completeness': 'complete' is not one of its choices; expected one of "
                                      "meets, fails"),
])
@pytest.mark.parametrize("template, field", [(EXPECTED_CASE, "expected_judgment"), (GOLD_CASE, "judge_gold")])
def test_expected_judgment_names_file_case_field_and_what_is_expected(tmp_path, gold, expected, template, field):
    path = write(tmp_path, template.format(gold=gold))
    with pytest.raises(ConfigError) as err:
        load_cases(path)
    msg = str(err.value)
    assert f"{path}:7" in msg and f"case 'A1', field /cases/0/{field}" in msg and expected in msg


def test_expected_judgment_category_is_checked_against_the_catalog_when_known(tmp_path):
    path = write(tmp_path, EXPECTED_CASE.format(gold="tone: meets"))
    assert load_cases(path).by_id("A1").expected_judgment == {"tone": "meets"}
    with pytest.raises(ConfigError, match=r"'tone' is not a judgment question.*category id of the loss catalog "
                                          r"\(adversarial_judged, answer_completeness\)"):
        load_cases(path, judged_categories=["answer_completeness", "adversarial_judged"])


def test_expected_judgment_vocabulary_is_the_panel_questions():
    from obai_e2e.config.judgment import CATEGORY_CHOICES, CODE_QUESTION_CHOICES
    from obai_e2e.judge.panel.questions import ABSTAIN, CODE_QUESTIONS, category_question
    assert {k: q.choices for k, q in CODE_QUESTIONS.items()} == \
        {k: (*v, ABSTAIN) for k, v in CODE_QUESTION_CHOICES.items()}
    assert category_question({"id": "x"}).choices == (*CATEGORY_CHOICES, ABSTAIN)


def test_every_problem_of_a_cases_file_is_named_at_once(tmp_path):
    """Two cases the schema refuses, then (once those are right) two the cases' own rules refuse: each reading
    names every problem it finds, with its line, case and field."""
    text = GOOD_CASE + ("  - id: A2\n    feature: market_data\n    query: q\n    expeced_tools: [x]\n"
                        "  - id: A3\n    feature: market_data\n    query: q\n    smoke: maybe\n")
    with pytest.raises(ConfigError) as err:
        load_cases(write(tmp_path, text))
    found = {(p["item"], p["field"]) for p in err.value.problems}
    assert found == {("case 'A2'", "/cases/1/expeced_tools"), ("case 'A3'", "/cases/2/smoke")}
    assert "2 problems (change all of them, then run again)" in str(err.value)
    assert "cases.yaml:10: case 'A2'" in str(err.value) and "cases.yaml:14: case 'A3'" in str(err.value)

    text = GOOD_CASE + ("    stochastic: true\n    repeats: 2\n"
                        "  - id: A2\n    feature: market_data\n    query: q\n    expected_sequence: [options_analysis]\n")
    with pytest.raises(ConfigError) as err:
        load_cases(write(tmp_path, text))
    assert [(p["item"], p["field"]) for p in err.value.problems] == [
        ("case 'A1'", "/cases/0/repeats"), ("case 'A2'", "/cases/1/expected_sequence")]
