"""The spans below the hub: guardrail, skill loads, specialist tools, answer composition.

Each function here is one traced span; its arguments (except ``ctx``) are the span
input and its return value the span output. Tool-level faults are applied here, inside
the span, so the trace shows exactly what the hub received.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from . import attacks
from . import compose as composer
from . import guardrail as guard
from . import calls, skills, tracing
from .jobs import Job, JobBook
from .specialists import (
    empty_envelope,
    error_envelope,
    fundamentals,
    market_data,
    options,
    padded,
    prediction,
    strategy,
)
from .tracing import traced


class SpecialistFailure(RuntimeError):
    """A specialist call raised instead of returning an envelope."""


@dataclass
class ToolContext:
    """What the tools of one turn share: its faults, its job book, its clock."""

    faults: frozenset[str]
    book: JobBook
    clock: Callable[[], float] = time.time
    calls: int = 0
    lenient: frozenset[str] = frozenset()
    """Guardrail checks that faults switch off."""

    def deliver(self, name: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run a specialist, unless a fault replaces the first call's result."""
        first = self.calls == 0
        self.calls += 1
        if first and "span_error" in self.faults:
            raise SpecialistFailure(f"{name}: connection reset by specialist")
        if first and "empty_payload" in self.faults:
            return empty_envelope()
        if first and "tool_error" in self.faults:
            return error_envelope("upstream timeout")
        if first and "big_output" in self.faults:
            return padded(compute())
        return compute()


@traced("guardrail", type="guardrail")
def guardrail(query: str, ctx: ToolContext) -> dict[str, Any]:
    return guard.classify(query, ctx.book.session, ctx.lenient).as_dict()


@traced("read_session")
def read_session(session: str, ctx: ToolContext) -> dict[str, Any]:
    """What another session stored (only reached when the session_leak fault lets it through)."""
    return {"sessions": attacks.session_records(ctx.book.home, session, ctx.book.session)}


@traced("load_skill")
def load_skill(skill: str) -> dict[str, Any]:
    return skills.load(skill)


@traced("market_data_analysis", type="tool")
def market_data_analysis(request: str, tickers: list[str], moving_averages: bool,
                         ctx: ToolContext) -> dict[str, Any]:
    return ctx.deliver("market_data_analysis", lambda: market_data.analyse(tickers, moving_averages))


@traced("fundamentals_analysis", type="tool")
def fundamentals_analysis(request: str, tickers: list[str], rank_by: str | None, top_n: int | None,
                          descending: bool, ctx: ToolContext) -> dict[str, Any]:
    peers = calls.PEERS_CLAUSE in request
    return ctx.deliver(
        "fundamentals_analysis", lambda: fundamentals.analyse(tickers, rank_by, top_n, descending, peers)
    )


def _strategy_flags(ctx: ToolContext) -> dict[str, bool]:
    return {
        "no_signals": "zero_trades" in ctx.faults,
        "omit_total_trades": "broken_contract" in ctx.faults,
    }


@traced("strategy_analysis", type="tool")
def strategy_analysis(spec: str, ctx: ToolContext) -> dict[str, Any]:
    return ctx.deliver("strategy_analysis", lambda: strategy.analyse(spec, ctx.book, **_strategy_flags(ctx)))


@traced("strategy_analysis", type="tool", ignore=("ctx", "job"))
def strategy_followup(job_id: str, spec: str, job: Job, ctx: ToolContext) -> dict[str, Any]:
    return ctx.deliver(
        "strategy_analysis", lambda: strategy.follow_up(job, ctx.clock(), **_strategy_flags(ctx))
    )


@traced("prediction_market_analysis", type="tool")
def prediction_market_analysis(request: str, ctx: ToolContext) -> dict[str, Any]:
    return ctx.deliver("prediction_market_analysis", lambda: prediction.analyse(request))


@traced("options_analysis", type="tool")
def options_analysis(request: str, ticker: str | None, ctx: ToolContext) -> dict[str, Any]:
    wrong = "wrong_option_math" in ctx.faults
    return ctx.deliver("options_analysis", lambda: options.analyse(request, ticker, wrong))


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    "market_data_analysis": market_data_analysis,
    "fundamentals_analysis": fundamentals_analysis,
    "strategy_analysis": strategy_analysis,
    "prediction_market_analysis": prediction_market_analysis,
    "options_analysis": options_analysis,
}


def call_specialist(name: str, inputs: dict[str, Any], ctx: ToolContext, job: Job | None = None) -> dict[str, Any]:
    """Call one specialist span with ``inputs``; inputs with a ``job_id`` ask about ``job``."""
    if "job_id" in inputs:
        if job is None:
            raise ValueError("a job follow-up needs its job")
        return strategy_followup(**inputs, job=job, ctx=ctx)
    return TOOLS[name](**inputs, ctx=ctx)


@traced("compose_answer", type="llm", ignore=("ctx", "outcomes", "style", "extra", "ask"))
def compose_answer(payloads: list[str], outcomes: list[composer.Outcome], style: composer.Style,
                   extra: list[str], ask: composer.Ask = composer.Ask(),
                   ctx: ToolContext | None = None) -> dict[str, Any]:
    answer = composer.compose(outcomes, style, ask)
    if extra:
        answer = " ".join([answer, *extra])
    tracing.record_usage(prompt_text="\n".join(payloads), completion_text=answer)
    return {"answer": answer}
