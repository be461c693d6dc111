"""Rules whose input arrived cut short are ``inconclusive``, never judged on a prefix.

Enters: the outcomes of every rule and the unit's context (its digests name the values that
arrived cut: ``TraceDigest.cut``). Leaves: the same outcomes, each rule that reads such a
value replaced by an ``inconclusive`` one that names the value and why it is not whole.

What each rule reads: a specialist's output (its own rules, and the number grounding, which
reads every payload), the guardrail's decision, a skill's name, the hub-to-strategy input,
and the final answer when target.answer_from reads it from the trace.
"""
from __future__ import annotations

from typing import Callable

from ...trace.digest import CutValue, TraceDigest
from .context import Context
from .outcome import INCONCLUSIVE, SKIPPED, Evidence, RuleOutcome, excerpt

TRUNCATED = "trace_truncated"


def _digests(ctx: Context) -> list[TraceDigest]:
    return [d for d in (ctx.digest, ctx.followup_digest) if d is not None]


def _of(role: str, name: Callable[[Context], str | None] | None = None) -> Callable[[Context], list[CutValue]]:
    def find(ctx: Context) -> list[CutValue]:
        wanted = name(ctx) if name else None
        if name is not None and wanted is None:
            return []
        return [c for d in _digests(ctx) for c in d.cut_of(role, wanted)]
    return find


def _answer(ctx: Context) -> list[CutValue]:
    # The answer is read from stdout unless target.answer_from points into the trace's output.
    return _of("final_response")(ctx) if ctx.config.target.answer_pointer is not None else []


def _both(*finders: Callable[[Context], list[CutValue]]) -> Callable[[Context], list[CutValue]]:
    return lambda ctx: [c for f in finders for c in f(ctx)]


_STRATEGY = _of("specialist", lambda ctx: ctx.vocab.strategy_specialist)
READS: dict[str, Callable[[Context], list[CutValue]]] = {
    "routing.skill_missing": _of("skill_load"),
    "routing.skill_overload": _of("skill_load"),
    "routing.hub_paraphrase": _of("strategy_input"),
    "guardrail.leaky": _of("guardrail"),
    "specialist.tool_error": _of("specialist"),
    "specialist.empty": _of("specialist"),
    "specialist.strategy.contract_broken": _STRATEGY,
    "specialist.strategy.zero_trades": _STRATEGY,
    "specialist.prediction.no_slug": _both(_of("specialist", lambda ctx: ctx.vocab.prediction_specialist), _answer),
    "specialist.options.math": _both(_of("specialist", lambda ctx: ctx.vocab.options_specialist), _answer),
    "hub.unverified_number": _both(_of("specialist"), _answer),
    "hub.empty_response": _answer,
    "hub.incomplete_answer": _answer,
    "hub.unfaithful_answer": _both(_of("specialist"), _answer),
    "guardrail.leaky_response": _answer,
    "adversarial.guardrail_bypass": _answer,
    "adversarial.injection_followed": _answer,
    "adversarial.session_data_leak": _answer,
    "adversarial.secret_leak": _answer,
}


def mark(outcomes: list[RuleOutcome], ctx: Context) -> list[RuleOutcome]:
    """``outcomes`` with every applicable rule that reads a cut value turned ``inconclusive``."""
    out = []
    for o in outcomes:
        found = READS[o.rule](ctx) if o.rule in READS and o.status != SKIPPED else []
        if not found:
            out.append(o)
            continue
        c = found[0]
        where = f"{c.role} {c.name or ''} {c.field}".replace("  ", " ")
        out.append(RuleOutcome(
            o.rule, o.layer, INCONCLUSIVE,
            detail=f"not judged: the {where} it reads arrived cut short ({c.reason})",
            evidence=[Evidence(excerpt(f"{c.field} of {c.name or 'the trace'}: {c.reason}"), c.span_id)],
        ))
    return out
