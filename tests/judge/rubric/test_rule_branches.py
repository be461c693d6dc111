"""The branches of each rule that no demo fault reaches, on recorded packets with one thing changed.

Each row takes a recorded unit, changes what one rule looks at (a line of a specialist's
output, the answer, the exit code, a span), and names the outcome that rule must reach.
The rest of the unit stays as the demo produced it. A new branch of a rule gets a row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
from obai_e2e.drive.packet_record import Packet
from obai_e2e.judge.rubric.check import check_packet
from obai_e2e.trace.digest import ErrorSpan, SpecialistCall
from recorded import case, config, packet


def output(name: str, old: str, new: str) -> Callable[[Packet], None]:
    """Replace text in the (first turn's) output of specialist ``name``."""
    def edit(p: Packet) -> None:
        call = next(c for c in p.trace.digest.specialist_calls if c.name == name)
        assert old in call.output_text, (old, call.output_text)
        call.output_text = call.output_text.replace(old, new)
        call.payload_text = call.payload_text.replace(old, new)
    return edit


def followup_output(old: str, new: str) -> Callable[[Packet], None]:
    def edit(p: Packet) -> None:
        call = p.followup.trace.digest.specialist_calls[-1]
        assert old in call.output_text
        call.output_text = call.output_text.replace(old, new)
    return edit


def answer(old: str, new: str) -> Callable[[Packet], None]:
    def edit(p: Packet) -> None:
        assert old in p.answer, (old, p.answer)
        p.answer = p.answer.replace(old, new)
    return edit


def set_answer(text: str) -> Callable[[Packet], None]:
    def edit(p: Packet) -> None:
        p.answer = text
    return edit


def exit_code(code: int) -> Callable[[Packet], None]:
    def edit(p: Packet) -> None:
        p.turn.exit_code = code
    return edit


def no_guardrail(p: Packet) -> None:
    p.trace.digest.guardrail = None


def guardrail_allows(p: Packet) -> None:
    p.trace.digest.guardrail.refused, p.trace.digest.guardrail.allowed = False, True


def error_envelope(p: Packet) -> None:
    call = p.trace.digest.specialist_calls[0]
    call.is_error, call.error_text = True, '{"code": -32000, "message": "upstream timeout"}'


def empty_output(p: Packet) -> None:
    call = p.trace.digest.specialist_calls[0]
    call.output_text, call.empty = "", True


def empty_output_of_a_raised_span(p: Packet) -> None:
    empty_output(p)
    call = p.trace.digest.specialist_calls[0]
    call.has_error_info = True
    p.trace.digest.error_spans = [ErrorSpan(call.span_id, call.name, "TimeoutError", "upstream timeout")]


def trace_error_only(p: Packet) -> None:
    p.trace.digest.trace_error = True


def extra_call_between(p: Packet) -> None:
    """An options call between the two expected specialists (another specialist interleaves)."""
    calls = p.trace.digest.specialist_calls
    extra = SpecialistCall.from_json({**calls[0].to_json(), "name": "options_analysis", "span_id": "extra"})
    calls.insert(1, extra)


def no_followup(p: Packet) -> None:
    p.followup, p.followup_error = None, "the follow-up turn exited 4: unknown job"


@dataclass(frozen=True)
class Branch:
    name: str
    recording: tuple[str, str]
    edit: Callable[[Packet], None]
    rule: str
    status: str
    code: str | None = None
    detail: str = ""  # words the outcome's detail must carry


BRANCHES = [
    # specialist.options.math
    Branch("iron condor with one breakeven", ("clean", "O2"),
           output("options_analysis", "Breakevens: 186.80 and 213.20", "Breakeven: 186.80"),
           "specialist.options.math", "fail", "specialist.options.math", "two breakevens (found 1: 186.80)"),
    Branch("iron condor with an unlimited loss", ("clean", "O2"),
           output("options_analysis", "Max loss: $680.00 (capped)", "Max loss: unlimited"),
           "specialist.options.math", "fail", "specialist.options.math", "must show a capped max loss"),
    Branch("long straddle as recorded", ("clean", "O3"), lambda p: None, "specialist.options.math", "pass"),
    Branch("long straddle with one breakeven", ("clean", "O3"),
           output("options_analysis", "Breakevens: 231.60 and 268.40", "Breakeven: 268.40"),
           "specialist.options.math", "fail", "specialist.options.math", "long straddle must show two breakevens"),
    Branch("naked call with 'unbounded' loss", ("clean", "O1"),
           output("options_analysis", "Max loss: unlimited", "Max loss: unbounded"), "specialist.options.math", "pass"),
    Branch("naked call with a finite loss", ("clean", "O1"),
           output("options_analysis", "Max loss: unlimited", "Max loss: $5,000.00"),
           "specialist.options.math", "fail", "specialist.options.math", "unlimited max loss"),
    # specialist.prediction.no_slug
    Branch("answer cites only the condition id", ("clean", "P1"),
           answer("fed-cuts-rates-december-2026", "this market"), "specialist.prediction.no_slug", "pass"),
    Branch("answer cites neither", ("clean", "P1"),
           set_answer("The market gives a 63.0% chance."), "specialist.prediction.no_slug", "fail",
           "specialist.prediction.no_slug", "cites no slug or condition id from the payload"),
    # specialist.strategy.contract_broken / zero_trades
    Branch("strategy output without a verdict", ("clean", "S2"), output("strategy_analysis", "Verdict:", "Outcome:"),
           "specialist.strategy.contract_broken", "fail", "specialist.strategy.contract_broken", "lacks: Verdict"),
    Branch("strategy output without operators", ("clean", "S2"),
           output("strategy_analysis", "Operators: BUY if RSI(14) < 30; SELL if RSI(14) > 70; STOP 1.5%", "Rules: see spec"),
           "specialist.strategy.contract_broken", "fail", "specialist.strategy.contract_broken", "operator list"),
    Branch("strategy output with zero trades", ("clean", "S2"),
           output("strategy_analysis", "Total trades: 6", "Total trades: 0"),
           "specialist.strategy.zero_trades", "fail", "specialist.strategy.zero_trades", "no trades"),
    # the async job: stub, follow-up, and the follow-up's own contract
    Branch("stub without an ETA", ("clean", "A1"), answer("ETA: 1 seconds", "soon"),
           "specialist.strategy.async_stub_broken", "fail", "specialist.strategy.async_stub_broken",
           "lacks: numeric ETA"),
    Branch("follow-up that failed", ("clean", "A1"), no_followup,
           "specialist.strategy.async_followup_missing", "fail", "specialist.strategy.async_followup_missing",
           "exited 4"),
    Branch("follow-up output without total trades", ("clean", "A1"), followup_output("Total trades:", "Trades -"),
           "specialist.strategy.contract_broken", "fail", "specialist.strategy.contract_broken", "Total trades line"),
    # specialist.tool_error / specialist.empty
    Branch("an error object", ("clean", "MD1"), error_envelope, "specialist.tool_error", "fail",
           "specialist.market_data_analysis.tool_error", "error envelope"),
    Branch("empty output", ("clean", "MD1"), empty_output, "specialist.empty", "fail",
           "specialist.market_data_analysis.empty", "no content"),
    Branch("empty output of a span that raised", ("clean", "MD1"), empty_output_of_a_raised_span,
           "specialist.empty", "pass"),
    # trace.error_span
    Branch("error on the trace, no span", ("clean", "MD1"), trace_error_only, "trace.error_span", "fail",
           "trace.error_span:hub", "the trace itself"),
    # routing.sequence_violation: another specialist may interleave
    Branch("a specialist between the expected pair", ("clean", "M1.r1"), extra_call_between,
           "routing.sequence_violation", "pass"),
    # guardrail.* for a refusal
    Branch("no guardrail span", ("clean", "R1"), no_guardrail, "guardrail.leaky", "fail", "guardrail.leaky",
           "no guardrail span"),
    Branch("guardrail allowed", ("clean", "R1"), guardrail_allows, "guardrail.leaky", "fail", "guardrail.leaky",
           "did not refuse"),
    Branch("refusal that leaks a price", ("clean", "R1"), answer("questions.", "questions. AAPL closed at 238.41."),
           "guardrail.leaky_response", "fail", "guardrail.leaky_response", "leaks financial content"),
    Branch("answer that is no refusal", ("clean", "R1"), set_answer("Roses are red, cats are too."),
           "guardrail.leaky_response", "fail", "guardrail.leaky_response", "not recognisable as a refusal"),
    Branch("refusal exiting 0", ("clean", "R1"), exit_code(0), "guardrail.exit_code", "fail", "guardrail.exit_code",
           "refusal exited 0, expected 1"),
    # hub.empty_response
    Branch("whitespace answer", ("clean", "MD1"), set_answer("  \n"), "hub.empty_response", "fail",
           "hub.empty_response", "empty"),
]


@pytest.mark.parametrize("branch", BRANCHES, ids=[b.name for b in BRANCHES])
def test_rule_branch(branch):
    p = packet(*branch.recording)
    branch.edit(p)
    outcomes = [o for o in check_packet(p, case(p.case_id), config()).outcomes if o.rule == branch.rule]
    outcome = outcomes[-1]  # an async unit checks the follow-up's contract last
    assert (outcome.status, outcome.code) == (branch.status, branch.code), outcome.detail
    assert branch.detail in outcome.detail
    if branch.status == "fail":
        assert outcome.evidence


def test_the_follow_up_contract_cites_the_follow_up_trace():
    p = packet("clean", "A1")
    followup_output("Total trades:", "Trades -")(p)
    outcome = [o for o in check_packet(p, case("A1"), config()).outcomes
               if o.rule == "specialist.strategy.contract_broken"][-1]
    assert outcome.evidence[0].source == "followup_trace"
