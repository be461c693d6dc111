"""One chat turn: policy check, toolkits and desks, the written reply.

Order: ``policy.check``, then for each planned desk ``toolkit.mount`` (its toolkit, once)
followed by ``agent:<desk>``, then ``writer``. All of it under one ``orchestrator`` span.
Faults (see :mod:`ledger_agent.faults`) are applied here.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Mapping

from . import __version__, book as book_mod, desks, planner, policy
from . import faults as fault_table
from .recorder import Recorder, Step, StepFailed, now

EXIT_ANSWERED = 0
EXIT_REFUSED = 3
STRAY_FIGURE = "312.40"
DESK_TITLES = {"quotes": "quote", "financials": "financials", "derivs": "derivatives"}
GENERAL_REPLY = ("I can look up closing prices, company financials and option payoffs for AAPL, MSFT, NVDA, "
                 "KO and JPM. Ask me about one of them.")


class UsageError(ValueError):
    """A setting the agent cannot work with."""


class DeskUnavailable(RuntimeError):
    """A desk could not be reached."""


@dataclass(frozen=True)
class Settings:
    """What the environment says about this turn."""

    run_ref: str | None = None
    tier: str = "retail"
    faults: frozenset[str] = frozenset()
    think_ms: int = 0
    project: str = "ledger-agent"
    trace: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        tier = (env.get("LEDGER_TIER") or "retail").strip()
        if tier not in ("retail", "pro"):
            raise UsageError(f"LEDGER_TIER must be retail or pro, got {tier!r}")
        raw_think = (env.get("LEDGER_THINK_MS") or "0").strip()
        if not raw_think.isdigit():
            raise UsageError(f"LEDGER_THINK_MS must be a whole number of milliseconds, got {raw_think!r}")
        trace = (env.get("LEDGER_TRACE") or "on").strip().lower()
        if trace not in ("on", "off"):
            raise UsageError(f"LEDGER_TRACE must be on or off, got {trace!r}")
        try:
            faults = fault_table.parse(env.get("LEDGER_FAULTS"))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return cls(run_ref=env.get("LEDGER_RUN_REF") or None, tier=tier, faults=faults, think_ms=int(raw_think),
                   project=env.get("LEDGER_OPIK_PROJECT") or "ledger-agent", trace=trace == "on")


@dataclass
class Reply:
    """What the CLI prints and exits with, and the recorded steps."""

    text: str
    outcome: str  # answered | refused
    exit_code: int
    root: Step
    notes: list[str] = field(default_factory=list)


def _call_desk(rec: Recorder, desk: str, question: str, symbols: list[str], faults: frozenset[str],
               first: bool) -> tuple[dict | None, list[str]]:
    """Run one desk under its span; (its output or None when it raised, the reply's sentences)."""
    data = book_mod.load()
    title = DESK_TITLES[desk]
    try:
        with rec.step(f"agent:{desk}", "tool", input={"ask": question, "symbols": symbols}) as s:
            if first and "desk_raises" in faults:
                raise DeskUnavailable(f"{desk} desk: connection reset")
            if first and "feed_error" in faults:
                s.output = {"status": "error", "detail": f"{title} feed timed out"}
                return s.output, [f"The {title} data is unavailable right now (the feed timed out)."]
            if first and "masked_error" in faults:
                s.output = {"ok": False, "reason": "rate limited"}
                return s.output, [f"Everything looks normal for {', '.join(symbols) or 'the market'} today."]
            if first and "blank_body" in faults:
                s.output = {"status": "ok", "body": ""}
                return s.output, [f"The {title} desk returned nothing for this question."]
            if desk == "quotes":
                result = desks.quotes(question, symbols, data)
            elif desk == "financials":
                result = desks.financials(question, symbols, data)
            else:
                result = desks.derivs(question, symbols, slip="payoff_slip" in faults)
            s.output = result.output
            return s.output, result.sentences
    except StepFailed:
        return None, [f"The {title} desk could not be reached."]


def _mount(rec: Recorder, desk: str) -> None:
    toolkit = planner.TOOLKITS[desk]
    with rec.step("toolkit.mount", "general", input={"requested_by": desk}, metadata={"toolkit": toolkit}) as s:
        s.output = {"mounted": True, "tools": [f"agent:{desk}"]}


def _refuse(rec: Recorder, decision: policy.Decision, question: str, symbols: list[str],
            faults: frozenset[str]) -> tuple[str, int]:
    if "policy_leak" in faults:
        _call_desk(rec, "quotes", question, symbols, frozenset(), first=False)
    text = policy.refusal_text(decision)
    if "chatty_refusal" in faults:
        c = book_mod.load().companies["AAPL"]
        text += f" For what it's worth, AAPL closed at {desks.money(c.close)}."
    return text, EXIT_ANSWERED if "refusal_exit_zero" in faults else EXIT_REFUSED


def run(question: str, settings: Settings) -> Reply:
    """Answer ``question``; the steps are recorded, not yet written."""
    f = settings.faults
    root = Step("orchestrator", "general", input={"question": question, "tier": settings.tier})
    rec = Recorder(root)
    data = book_mod.load()
    symbols = data.find(question)
    planned = planner.desks(question)
    with rec.step("policy.check", "guardrail", input={"text": question, "tier": settings.tier}) as s:
        decision = policy.check(planner.is_finance(question, symbols), "derivs" in planned, settings.tier)
        s.output = decision.as_output()

    if not decision.allowed:
        text, code = _refuse(rec, decision, question, symbols, f)
        outcome = "refused"
    else:
        sentences: list[str] = []
        mounted: set[str] = set()
        for i, desk in enumerate(planned):
            first, last = i == 0, i == len(planned) - 1
            late = first and "late_mount" in f
            if not late and not (first and "skip_mount" in f) and desk not in mounted:
                _mount(rec, desk)
                mounted.add(desk)
            if last and "skip_desk" in f and len(planned) > 1:
                continue
            sentences += _call_desk(rec, desk, question, symbols, f, first)[1]
            if late:
                _mount(rec, desk)
                mounted.add(desk)
        if "extra_mount" in f and planned:
            _mount(rec, "financials" if "derivs" in planned else "derivs")
        if "stray_desk" in f and planned:
            extra = next(d for d in ("financials", "quotes", "derivs") if d not in planned)
            _call_desk(rec, extra, question, symbols, frozenset(), first=False)
        if settings.think_ms:
            time.sleep(settings.think_ms / 1000)
        with rec.step("writer", "llm", input={"notes": sentences}) as s:
            text = " ".join(sentences) if sentences else GENERAL_REPLY
            if "stray_figure" in f and planned:
                text += f" Analysts' consensus target is {STRAY_FIGURE}."
            if "blank_reply" in f:
                text = ""
            s.output = {"text": text}
        code, outcome = EXIT_ANSWERED, "answered"
    root.output = {"outcome": outcome}
    root.end = now()
    return Reply(text, outcome, code, root)


def trace_fields(question: str, conversation: str, reply: Reply, settings: Settings) -> dict:
    """The trace-level fields of a turn (name, input, output, metadata, thread)."""
    return {
        "trace_name": "chat-turn",
        "input": {"messages": [{"role": "user", "content": question}], "conversation": conversation},
        "output": {"final": {"text": reply.text, "outcome": reply.outcome}},
        "metadata": {"run_ref": settings.run_ref, "agent": "ledger-agent", "version": __version__,
                     "tier": settings.tier, "faults": sorted(settings.faults)},
        "thread_id": conversation,
    }
