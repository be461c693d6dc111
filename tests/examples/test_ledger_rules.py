"""The rubric on stored ledger-agent traces, read through its vocabulary and variants of it.

The packets and raw traces under data/ are real (re-record them with data/record.py);
each test curates a stored trace with a vocabulary and runs the rules on it, as a run
would, without driving the agent.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from obai_e2e.config.cases import load_cases
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.packet_record import Packet
from obai_e2e.judge.rubric import check_packet
from obai_e2e.judge.rubric.numbers import Pool, extract, payload_texts
from obai_e2e.trace import raw
from obai_e2e.trace.curate import curate

DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ledger-agent"


def target(tmp_path: Path, edit=None):
    data = yaml.safe_load((EXAMPLE / "target.yaml").read_text())
    if edit:
        edit(data)
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_target_config(path)


def stored(unit: str) -> tuple[dict, dict]:
    return (json.loads((DATA / f"{unit}.packet.json").read_text()),
            json.loads((DATA / f"{unit}.trace.json").read_text()))


def case_of(unit: str, config):
    cases = load_cases(EXAMPLE / "cases.yaml", specialists=config.vocabulary.specialists)
    return cases.by_id(unit.split("_")[0])


def judge(unit: str, config) -> tuple[dict, dict]:
    """(outcomes by rule, check result) of a stored unit, its trace curated again with ``config``."""
    packet, tree = stored(unit)
    digest = curate(tree["trace"], tree["spans"], config.vocabulary).digest
    packet = copy.deepcopy(packet)
    packet["trace"]["digest"] = digest.to_json()
    result = check_packet(Packet.from_json(packet), case_of(unit, config), config).to_json()
    return {o["rule"]: o for o in result["outcomes"]}, result


@pytest.fixture
def ledger(tmp_path):
    return target(tmp_path)


def test_stored_digest_is_what_curating_the_stored_trace_gives(ledger):
    for unit in ("Q1", "Q2_feed_error", "O1", "R1"):
        packet, tree = stored(unit)
        assert curate(tree["trace"], tree["spans"], ledger.vocabulary).digest.to_json() == packet["trace"]["digest"]


def test_specialists_and_skills_read_from_pattern_and_metadata(ledger):
    _, tree = stored("Q1")
    d = curate(tree["trace"], tree["spans"], ledger.vocabulary).digest
    assert [(c.name, c.span_name) for c in d.specialist_calls] == [("quotes", "agent:quotes")]
    assert [s.skill for s in d.skill_loads] == ["equities"]
    assert d.hub_span_id == tree["spans"][0]["id"]


def test_regex_patterns_and_skill_name_from_the_span_name(tmp_path):
    def regexes(d):
        d["vocabulary"]["specialist_span"] = "re:^agent:(?P<name>[a-z]+)$"
        d["vocabulary"]["skill_load_span"] = "re:^toolkit\\.(?P<name>[a-z]+)$"
        d["vocabulary"]["skill_name_field"] = "name"
        d["vocabulary"]["hub_span"] = "orch*"
    config = target(tmp_path, regexes)
    _, tree = stored("Q1")
    d = curate(tree["trace"], tree["spans"], config.vocabulary).digest
    assert [c.name for c in d.specialist_calls] == ["quotes"]
    assert [s.skill for s in d.skill_loads] == ["mount"]  # the {name} of toolkit.mount
    assert d.hub_span_id is not None


def test_without_a_specialist_pattern_no_span_is_a_specialist(tmp_path):
    config = target(tmp_path, lambda d: d["vocabulary"].pop("specialist_span"))
    _, tree = stored("Q1")
    assert curate(tree["trace"], tree["spans"], config.vocabulary).digest.specialist_calls == []


def test_number_at_the_start_of_a_line_is_grounded_on_decoded_text(ledger):
    packet, _ = stored("Q1")
    payload = packet["trace"]["digest"]["specialist_calls"][0]["payload_text"]
    assert "\\n211.37 close" in payload  # the JSON text: a line break is backslash and n
    number = next(n for n in extract(packet["answer"]) if n.text == "211.37")
    assert not Pool([payload]).contains(number)  # what reading the JSON text missed
    assert Pool(payload_texts(payload)).contains(number)
    outcomes, result = judge("Q1", ledger)
    assert outcomes["hub.unverified_number"]["status"] == "pass" and result["verdict"] == "pass"


def test_payload_texts_keeps_numbers_as_written():
    assert payload_texts('{"a": 238.40, "b": ["x\\n12 y"], "c": 1e3}') == ["a", "238.40", "b", "x\n12 y", "c", "1e3"]
    assert payload_texts("plain text 42") == ["plain text 42"]


def test_skill_load_before_its_specialist(ledger):
    ok, _ = judge("Q1", ledger)
    assert ok["routing.sequence_violation"]["status"] == "pass"
    late, result = judge("Q1_late_mount", ledger)
    assert late["routing.sequence_violation"]["status"] == "fail"
    assert late["routing.sequence_violation"]["detail"].startswith("quotes (+")
    assert result["reasons"] == ["routing.sequence_violation"]


def test_string_guardrail_decision(ledger, tmp_path):
    outcomes, result = judge("R1", ledger)
    assert outcomes["guardrail.leaky"]["status"] == "pass" and result["verdict"] == "pass"
    plain = target(tmp_path, lambda d: [d["vocabulary"].pop(k) for k in ("guardrail_allowed_values",
                                                                          "guardrail_refused_values")])
    outcomes, _ = judge("R1", plain)
    assert outcomes["guardrail.leaky"]["status"] == "fail"
    assert outcomes["guardrail.leaky"]["detail"] == "rejection expected but the guardrail did not refuse"


def test_declared_error_shape(ledger):
    outcomes, result = judge("Q2_feed_error", ledger)
    assert result["reasons"] == ["specialist.quotes.tool_error"]
    assert outcomes["specialist.tool_error"]["detail"] == "quotes reported an error (/output/status == 'error')"
    assert outcomes["specialist.tool_error"]["evidence"][0]["excerpt"] == "quote feed timed out"


def test_undeclared_error_the_answer_admits(tmp_path):
    config = target(tmp_path, lambda d: d["vocabulary"]["specialist_output"].pop("errors"))
    outcomes, result = judge("Q2_feed_error", config)
    assert outcomes["specialist.tool_error"]["status"] == "pass"
    assert outcomes["specialist.tool_error"]["detail"] == "quotes looks like it failed (status: error) and the answer says so"
    assert result["reasons"] == ["specialist.quotes.empty"]  # and it gave nothing to use


def test_undeclared_error_behind_an_answer_that_claims_success(ledger):
    outcomes, result = judge("F1_masked_error", ledger)
    assert result["reasons"] == ["specialist.financials.tool_error"]
    assert "(ok: false)" in outcomes["specialist.tool_error"]["detail"]
    assert "does not declare" in outcomes["specialist.tool_error"]["detail"]


def test_options_from_payload_labels_and_defaults(ledger, tmp_path):
    assert judge("O1", ledger)[0]["specialist.options.math"]["status"] == "pass"

    def labels(d):
        d["vocabulary"].pop("options_payload")
        d.setdefault("rubric", {})["options_labels"] = {"max_loss": "(?i)^worst case\\b",
                                                        "breakeven": "(?i)^break-even\\b",
                                                        "unlimited": "(?i)\\bno limit\\b"}
    assert judge("O1", target(tmp_path, labels))[0]["specialist.options.math"]["status"] == "pass"
    english = target(tmp_path, lambda d: d["vocabulary"].pop("options_payload"))
    math = judge("O1", english)[0]["specialist.options.math"]
    assert math["status"] == "fail" and math["detail"] == "a naked short call must show an unlimited max loss"


def test_answer_from_the_trace_output():
    packet, tree = stored("G1_blank_reply")
    assert json.loads(packet["turn"]["stdout"])["reply"] == "" and packet["answer"] == ""
    assert tree["trace"]["output"]["final"]["text"] == ""


def test_raw_tree_marks_what_the_vocabulary_reads(ledger):
    _, tree = stored("Q1")
    text = raw.render(raw.tree(tree["trace"], tree["spans"], ledger.vocabulary))
    lines = text.splitlines()
    assert lines[0].startswith("TRACE ") and lines[0].endswith("tags (none)")
    heads = [line for line in lines if "─ " in line]
    assert [h.split("─ ", 1)[1].split(" [")[0] for h in heads] == ["orchestrator", "policy.check", "toolkit.mount",
                                                                     "agent:quotes", "writer"]
    assert heads[0].startswith("└─ ") and heads[-1].startswith("   └─ ")
    assert heads[1].endswith('← guardrail: /output/decision = "allow" (allowed)')
    assert heads[2].endswith("← skill load: equities") and heads[3].endswith("← specialist: quotes")
    assert "   │     metadata:  {\"toolkit\": \"equities\"}" in lines
    unmarked = raw.render(raw.tree(tree["trace"], tree["spans"]))
    assert "←" not in unmarked


def test_verdict_refusals_name_the_wrong_part(ledger):
    from obai_e2e.base.errors import VerdictInvalid
    from obai_e2e.judge.verdict import validate

    def refused(case_id: str, reasons: list[str], verdict: str = "fail") -> str:
        submitted = {"schema_version": 1, "unit_id": case_id, "verdict": verdict, "reasons": reasons,
                     "judgment": "x"}
        with pytest.raises(VerdictInvalid) as err:
            validate(submitted, case_of(case_id, ledger), ledger, case_id)
        return str(err.value)

    typo = refused("Q1", ["specialist.quotes.tool_eror"])
    assert typo == ("verdict /reasons/0: 'specialist.quotes.tool_eror': after the specialist name 'quotes' comes "
                    "'.empty' or '.tool_error', not 'tool_eror'")
    elsewhere = refused("R1", ["specialist.quotes.tool_error"])  # a rejection case admits no specialist code
    assert elsewhere.startswith("verdict /reasons/0: 'specialist.quotes.tool_error' does not apply to this case: "
                                "a fail needs exactly one of guardrail.leaky, guardrail.exit_code, "
                                "guardrail.leaky_response")
    assert "A-Za-z" not in elsewhere
    # Names read through a pattern may be any name: a desk nobody listed still gets a recordable code.
    accepted = validate({"schema_version": 1, "unit_id": "Q1", "verdict": "fail",
                         "reasons": ["specialist.news.empty"], "judgment": "x"}, case_of("Q1", ledger), ledger, "Q1")
    assert accepted.value["reasons"] == ["specialist.news.empty"]
    # A dot ends the name in a code: a desk called fx.rates is written fx%2Erates.
    dotted = refused("Q1", ["specialist.fx.rates.empty"])
    assert dotted.endswith("the specialist name 'fx.rates' may only have letters, digits, _ : - and %-escapes "
                           "(a dot is written %2E)"), dotted
    encoded = validate({"schema_version": 1, "unit_id": "Q1", "verdict": "fail",
                        "reasons": ["specialist.fx%2Erates.empty"], "judgment": "x"}, case_of("Q1", ledger), ledger,
                       "Q1")
    assert encoded.value["reasons"] == ["specialist.fx%2Erates.empty"]
