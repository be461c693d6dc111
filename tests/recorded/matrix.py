"""The fault matrix: which case each demo fault is scoped to, and what the harness must say.

One table for the recorded data (``record.py`` drives these faults), the fast rubric tests
on that data and the end-to-end fault matrix. A new fault of the demo gets a row here; a
new rubric rule gets a name in ``RULES`` and a fault that trips it.
"""
from __future__ import annotations

from typing import NamedTuple


class Row(NamedTuple):
    """One fault: the case it is scoped to, the query text that scopes it and the expected outcome."""

    case_id: str
    scope: str
    verdict: str
    code: str
    implied: frozenset[str] = frozenset()
    """Other codes the fault trips as a consequence (never the verdict's reason)."""


MATRIX: dict[str, Row] = {
    "drop_skill": Row("MD2", "52-week range", "fail", "routing.skill_missing"),
    "extra_skill": Row("MD1", "latest price of AAPL", "fail", "routing.skill_overload"),
    "skip_specialist": Row("M3", "TSLA price and the odds", "fail", "routing.specialist_missing"),
    "reorder_specialists": Row("M2", "Show MSFT's P/E", "fail", "routing.sequence_violation"),
    "extra_specialist": Row("MD4", "quote for TSLA", "needs_review", "routing.unexpected_specialist"),
    "paraphrase_threshold": Row("S2", "Backtest a strategy on MSFT", "fail", "routing.hub_paraphrase"),
    "span_error": Row("F3", "Compare revenue and debt", "fail", "trace.error_span:fundamentals_analysis"),
    "empty_payload": Row("F4", "dividend does Coca-Cola", "fail", "specialist.fundamentals_analysis.empty"),
    "tool_error": Row("MD3", "How is Nvidia trading", "fail", "specialist.market_data_analysis.tool_error"),
    "broken_contract": Row("S3", "RSI(7) backtest on TSLA", "fail", "specialist.strategy.contract_broken"),
    "zero_trades": Row("S4", "RSI(21) on KO", "fail", "specialist.strategy.zero_trades"),
    # No job id, so no follow-up either.
    "no_job_id": Row("A2", "full history backtest of AAPL", "fail", "specialist.strategy.async_stub_broken",
                     frozenset({"specialist.strategy.async_followup_missing"})),
    "lost_job": Row("A3", "backtest NVDA with RSI(14)", "fail", "specialist.strategy.async_followup_missing"),
    "no_slug": Row("P1", "What are the odds the Fed cuts", "fail", "specialist.prediction.no_slug"),
    "wrong_option_math": Row("O1", "if I sell a naked call on AAPL", "fail", "specialist.options.math"),
    "empty_answer": Row("F5", "Tesla's valuation", "fail", "hub.empty_response"),
    "ungrounded_number": Row("MD5", "50-day moving average of AMZN", "needs_review",
                             "hub.unverified_number:987.65"),
    "leaky_guardrail": Row("R2", "weather in Paris", "fail", "guardrail.leaky"),
    "leaky_response": Row("R3", "sourdough", "fail", "guardrail.leaky_response"),
    "wrong_exit_code": Row("R4", "joke about programmers", "fail", "guardrail.exit_code"),
    # Refused, so nothing ran after the guardrail; the refusal exits 1 with no answer to ground.
    "overblock": Row("F1", "net margin and P/E", "fail", "guardrail.false_refusal",
                     frozenset({"routing.skill_missing", "routing.specialist_missing"})),
    "hang": Row("O4", "Bull call spread", "inconclusive", "cli_timeout"),
    "no_trace": Row("O5", "naked call on TSLA at strike 300", "inconclusive", "trace_not_found"),
    "duplicate_trace": Row("G2", "ETF or in single stocks", "inconclusive", "multi_match"),
    # Nothing ran after the hub raised.
    "crash": Row("MD6", "performance von XOM", "fail", "trace.error_span:hub",
                 frozenset({"routing.skill_missing", "routing.specialist_missing", "hub.empty_response"})),
}

# Every rubric rule (the ``rule`` of its outcome): each passes on some clean unit and trips
# on some fault's unit.
RULES = (
    "trace.error_span", "routing.skill_missing", "routing.skill_overload", "routing.specialist_missing",
    "routing.sequence_violation", "routing.unexpected_specialist", "routing.hub_paraphrase",
    "guardrail.leaky", "guardrail.false_refusal", "specialist.tool_error", "specialist.empty", "specialist.strategy.contract_broken",
    "specialist.strategy.zero_trades", "specialist.strategy.async_stub_broken",
    "specialist.strategy.async_followup_missing", "specialist.prediction.no_slug", "specialist.options.math",
    "hub.empty_response", "hub.unverified_number", "guardrail.exit_code", "guardrail.leaky_response",
)


class Infra(NamedTuple):
    """A unit whose verdict is ``inconclusive`` for a reason no demo fault produces, and how it is made."""

    case_id: str
    agent: str
    """``demo``, or the ``HOSTILE_AGENT`` behaviour of tests/agents/hostile_agent.py."""
    store: str = "local"
    """``local`` (the recording's store) or ``dead`` (an address nothing listens on)."""
    disk_budget_mb: int | None = None
    """target.yaml's ``sandbox.disk_budget_mb`` for it (None: the bundled default)."""


INFRA: dict[str, Infra] = {
    "target_crashed": Infra("MD1", "segv"),
    "target_failed": Infra("MD1", "usage"),
    "trace_incomplete": Infra("MD1", "open_span"),
    "opik_unreachable": Infra("MD4", "demo", store="dead"),
    "disk_budget_exceeded": Infra("MD1", "fill:3", disk_budget_mb=1),
}


# Codes no recording can trip, each with the case whose recorded clean unit is changed the way
# the harness itself would have written it (tests/judge/rubric/test_codes.py):
DERIVED: dict[str, str] = {
    "hub.answer_truncated": "MD1",   # stdout over 1 MB: a recording of it would hold a megabyte
    "hub.incomplete_answer": "MD1",  # a judgment: a judge panel's majority trips it, never a program
    "hub.unfaithful_answer": "MD1",  # the same, for faithfulness to the payloads
    "harness_error": "MD1",          # the harness itself failed while driving the unit
    # The unit's trace, read again after the run's last turn (drive/evidence.py), was written to or gone.
    "trace_changed_after_turn": "MD1",
    "trace_deleted": "MD1",
    "trace_truncated": "MD1",        # a specialist output read cut, as a search without truncate=false reads it
    # The ui channel: the recorded unit as a ui unit whose page showed something else (the
    # observation the browser driver writes); the recordings are of the cli channel.
    "ui.answer_not_rendered": "MD1",
    "ui.raw_markup": "MD1",
    "ui.error_banner": "MD1",
    "ui.slow_first_token": "MD1",
    "ui.slow_done": "MD1",
    "ui_outage": "MD1",
    "ui_timeout": "MD1",
    # Attacks: a recorded answer given to an adversarial case, with the canary findings the
    # drive stage writes (the recorded adversarial cases ran on a clean demo: they withstand).
    "adversarial.guardrail_bypass": "R1",
    "adversarial.injection_followed": "MD1",
    "adversarial.session_data_leak": "R1",
    "adversarial.secret_leak": "R1",
}


def spec(faults=None) -> str:
    """The ``OBAI_DEMO_FAULTS`` value that switches on ``faults`` (default: all), each scoped to its case."""
    names = MATRIX if faults is None else faults
    return ",".join(f"{name}@{MATRIX[name].scope}" for name in names)
