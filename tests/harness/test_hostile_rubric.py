"""Rubric rules for hostile output, on stored demo packets: each passes clean and trips on its fault."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from obai_e2e.base.mdtable import cell, unescape
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.packet_record import Packet
from obai_e2e.judge.rubric import check_packet, codes
from obai_e2e.judge.verdict import mechanical_verdict, validate

DATA = Path(__file__).resolve().parents[1] / "judging" / "data" / "demo-run"
CONFIG = load_target_config()
CASES = load_cases_for(CONFIG)


def packet(unit_id: str, change=None) -> Packet:
    data = json.loads((DATA / f"{unit_id}.json").read_text(encoding="utf-8"))
    if change:
        change(data)
    return Packet.from_json(data)


def outcome(check, rule: str):
    return next(o for o in check.outcomes if o.rule == rule)


def test_a_whole_answer_passes_the_truncation_rule():
    check = check_packet(packet("MD1"), CASES.by_id("MD1"), CONFIG)
    assert check.verdict == "pass" and outcome(check, "hub.answer_truncated").status == "pass"


def test_a_cut_answer_trips_exactly_the_truncation_rule():
    def cut(data):
        data["turn"]["stdout_truncated"] = True
        data["turn"]["stdout_bytes"] = 20_000_000
    check = check_packet(packet("MD1", cut), CASES.by_id("MD1"), CONFIG)
    assert check.verdict == "needs_review" and check.reasons == ["hub.answer_truncated"]
    o = outcome(check, "hub.answer_truncated")
    assert o.evidence[0].excerpt.endswith("bytes of 20000000")
    verdict = mechanical_verdict(check)
    validate(verdict, CASES.by_id("MD1"), CONFIG, "MD1")  # the contract admits it


@pytest.mark.parametrize("exit_code, reason, text", [
    (-11, "target_crashed", "killed by SIGSEGV (exit -11)"),
    (-6, "target_crashed", "killed by SIGABRT (exit -6)"),
    (1, "target_failed", "the target exited 1 without a trace; stderr: "),
    (0, "trace_not_found", "no trace"),
])
def test_a_signal_death_without_a_trace_is_a_crash(exit_code, reason, text):
    def crash(data):
        data["turn"]["exit_code"] = exit_code
        data["trace"] = {"status": "trace_not_found", "message": "no trace matched"}
    check = check_packet(packet("MD1", crash), CASES.by_id("MD1"), CONFIG)
    assert check.verdict == "inconclusive" and check.reasons == [reason]
    assert text in check.judgment or reason == "trace_not_found"
    validate(mechanical_verdict(check), CASES.by_id("MD1"), CONFIG, "MD1")


@pytest.mark.parametrize("case_id, exit_code, stderr, reason", [
    ("MD1", 0, "usage: obai-demo [-h] COMMAND ...\nobai-demo: error: argument COMMAND: invalid choice: 'askk'\n",
     "target_failed"),
    ("MD1", 2, "Usage: agent [OPTIONS] COMMAND\nTry 'agent --help' for help.\n\nError: No such command 'askk'.\n",
     "target_failed"),
    ("R1", 1, "refused\n", "trace_not_found"),      # the refusal's own exit code: no failure of the turn
    ("MD1", 0, "token usage: 12 tokens\n", "trace_not_found"),
])
def test_a_turn_that_failed_without_a_trace_says_how(case_id, exit_code, stderr, reason):
    def failed(data):
        data["turn"].update(exit_code=exit_code, stderr_tail=stderr)
        data["trace"] = {"status": "trace_not_found", "message": "no trace matched"}
    check = check_packet(packet(case_id, failed), CASES.by_id(case_id), CONFIG)
    assert check.verdict == "inconclusive" and check.reasons == [reason]
    if reason == "target_failed":
        last = [line for line in stderr.splitlines() if line.strip()][-1]
        assert f"exited {exit_code}" in check.judgment and "usage error" in check.judgment and last in check.judgment
    validate(mechanical_verdict(check), CASES.by_id(case_id), CONFIG, case_id)


def test_a_timeout_kill_is_not_a_crash():
    def killed(data):
        data["turn"].update(exit_code=-9, timed_out=True, killed=True)
        data["trace"] = {"status": "cli_timeout", "message": "killed"}
    assert check_packet(packet("MD1", killed), CASES.by_id("MD1"), CONFIG).reasons == ["cli_timeout"]


@pytest.mark.parametrize("name", ["my tool", "x\x1b[31m", "&lt;b&gt;", "", "a.b:c", "Ünï 株価", "n" * 500, "a|b`c"])
def test_a_span_name_from_data_always_makes_an_admissible_code(name):
    def raise_in(data):
        data["trace"]["digest"]["error_spans"] = [{"span_id": "s1", "name": name, "exception_type": "E",
                                                   "message": "m"}]
    check = check_packet(packet("MD1", raise_in), CASES.by_id("MD1"), CONFIG)
    assert check.verdict == "fail" and check.reasons[0].startswith("trace.error_span:")
    assert codes.is_hard(check.reasons[0]) and len(check.reasons[0]) <= len("trace.error_span:") + codes.MAX_NAME
    validate(mechanical_verdict(check), CASES.by_id("MD1"), CONFIG, "MD1")
    assert name[:100] in outcome(check, "trace.error_span").evidence[0].excerpt  # the raw name stays


def test_code_names_keep_the_grammar_and_encode_the_rest():
    assert codes.code_name("hub") == "hub"
    assert codes.code_name("my tool") == "my%20tool"
    assert codes.code_name("a.b:c-d_e") == "a.b:c-d_e"
    assert codes.code_name("100%") == "100%25"
    assert codes.specialist_name("Market Data.v2") == "Market%20Data%2Ev2"
    long = codes.code_name("é" * 200)
    assert len(long) <= codes.MAX_NAME and long != codes.code_name("é" * 199)
    assert codes.code_name("\ud800") == "%ED%A0%80"


def test_cells_never_carry_control_characters_and_round_trip_entities():
    text = "esc\x1b[2J bel\x07 nul\x00 del\x7f csi\x9b &lt;b&gt; <i> a|b"
    written = cell(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in written)
    assert unescape(written) == "esc\u241b[2J bel\u2407 nul\u2400 del\u2421 csi\ufffd &lt;b&gt; <i> a|b"


def test_a_turn_whose_exports_the_backend_refused_says_so():
    logged = ("Failed to export span batch code: 401, reason: Unauthorized\n"
              "Failed to export span batch code: 401, reason: Unauthorized\n")

    def refused(data):
        data["turn"].update(exit_code=0, stderr_tail="INFO agent ready\n" + logged)
        data["trace"] = {"status": "trace_not_found", "message": "no trace matched (tag: x) within 30 s"}
    check = check_packet(packet("MD1", refused), CASES.by_id("MD1"), CONFIG)
    assert check.verdict == "inconclusive" and check.reasons == ["trace_not_found"]
    assert "the trace backend refused 2 exports (the agent's stderr): 401 Unauthorized" in check.judgment
    validate(mechanical_verdict(check), CASES.by_id("MD1"), CONFIG, "MD1")
