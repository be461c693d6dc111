"""Layer 1 — routing and skill loading, read from the curated trace.

trace.error_span:<span_name> (first: a raised span is the cause of what follows it),
guardrail.false_refusal (next: a refused question loads no skill and calls no specialist),
routing.skill_missing, routing.skill_overload, routing.specialist_missing,
routing.sequence_violation (two first starts at one stamped instant are a tie, not out of order),
routing.unexpected_specialist (soft), routing.hub_paraphrase.
"""
from __future__ import annotations

from ...config.cases import SKILL_PREFIX
from ...trace.digest import SkillLoad
from . import thresholds
from .codes import code_name
from .context import Context
from .outcome import FAIL, NEEDS_REVIEW, PASS, SKIPPED, Evidence, RuleOutcome, excerpt

LAYER = 1


def _loads(ctx: Context) -> dict[str, list[SkillLoad]]:
    out: dict[str, list[SkillLoad]] = {}
    for load in ctx.digest.skill_loads:
        out.setdefault(load.skill, []).append(load)
    return out


def _loaded_summary(ctx: Context) -> Evidence:
    names = [s.skill for s in ctx.digest.skill_loads]
    return Evidence(excerpt("SKILL LOADS: " + (", ".join(names) if names else "(none)")))


def skill_missing(ctx: Context) -> RuleOutcome:
    rule = "routing.skill_missing"
    expected = ctx.case.expected_skills
    if not expected:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="the case expects no skills")
    loads = _loads(ctx)
    missing = [s for s in expected if s not in loads]
    if missing:
        return RuleOutcome(rule, LAYER, FAIL, code=rule,
                       detail=f"expected skill(s) not loaded: {', '.join(missing)}",
                       evidence=[_loaded_summary(ctx)])
    return RuleOutcome(rule, LAYER, PASS, detail=f"loaded: {', '.join(expected)}",
                   evidence=[Evidence(f"load_skill {s}", loads[s][0].span_id) for s in expected])


def skill_overload(ctx: Context) -> RuleOutcome:
    rule = "routing.skill_overload"
    banned = ctx.case.expected_skills_absent
    if not banned:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="the case bans no skills")
    loads = _loads(ctx)
    present = [s for s in banned if s in loads]
    if present:
        return RuleOutcome(rule, LAYER, FAIL, code=rule,
                       detail=f"banned skill(s) loaded: {', '.join(present)}",
                       evidence=[Evidence(f"load_skill {s}", loads[s][0].span_id) for s in present])
    return RuleOutcome(rule, LAYER, PASS, detail=f"none of {', '.join(banned)} loaded", evidence=[_loaded_summary(ctx)])


def _first_index(ctx: Context) -> dict[str, int]:
    first: dict[str, int] = {}
    for index, call in enumerate(ctx.digest.specialist_calls):
        first.setdefault(call.name, index)
    return first


def _calls_summary(ctx: Context) -> Evidence:
    calls = [f"{c.name} +{c.offset_ms} ms" for c in ctx.digest.specialist_calls]
    return Evidence(excerpt("SPECIALIST CALLS: " + ("; ".join(calls) if calls else "(none)")))


def specialist_missing(ctx: Context) -> RuleOutcome:
    rule = "routing.specialist_missing"
    expected = ctx.case.expected_tools
    if not expected:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="the case expects no specialists")
    first = _first_index(ctx)
    missing = [t for t in expected if t not in first]
    if missing:
        return RuleOutcome(rule, LAYER, FAIL, code=rule, detail=f"expected specialist(s) not called: {', '.join(missing)}",
                       evidence=[_calls_summary(ctx)])
    calls = ctx.digest.specialist_calls
    return RuleOutcome(rule, LAYER, PASS, detail=f"called: {', '.join(expected)}",
                   evidence=[Evidence(f"{t} called", calls[first[t]].span_id) for t in expected])


def _first_starts(ctx: Context) -> dict[str, tuple[int, int | None, str | None]]:
    """Sequence entry -> (start-order position, offset, span id) of its first span.

    Entries are specialist names and ``skill:<name>`` for a skill's first load; positions
    are the spans' start order (start time, then id), as the digest lists them.
    """
    position = {row.id: i for i, row in enumerate(ctx.digest.spans)}
    first: dict[str, tuple[int, int | None, str | None]] = {}
    for i, call in enumerate(ctx.digest.specialist_calls):
        first.setdefault(call.name, (position.get(call.span_id, i), call.offset_ms, call.span_id))
    for i, load in enumerate(ctx.digest.skill_loads):
        first.setdefault(SKILL_PREFIX + load.skill, (position.get(load.span_id, i), load.offset_ms, load.span_id))
    return first


def sequence_violation(ctx: Context) -> RuleOutcome:
    """Each adjacent pair (A, B): A's first start precedes B's, or both began in the same instant (a tie)."""
    rule = "routing.sequence_violation"
    seq = ctx.case.expected_sequence
    if len(seq) < 2:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="no sequence of two or more entries expected")
    first = _first_starts(ctx)
    ties = []
    for a, b in zip(seq, seq[1:]):
        absent = next((x for x in (a, b) if x not in first), None)
        if absent is not None:
            why = (f"skill {absent[len(SKILL_PREFIX):]} was not loaded (see routing.skill_missing)"
                   if absent.startswith(SKILL_PREFIX) else f"{absent} was not called (see routing.specialist_missing)")
            return RuleOutcome(rule, LAYER, SKIPPED, detail=why)
        (pa, oa, sa), (pb, ob, sb) = first[a], first[b]
        if ctx.digest.tied(sa, sb):
            ties.append(f"{a} and {b} started in the same instant (+{oa} ms): a tie, not out of order")
        elif pa > pb:
            return RuleOutcome(rule, LAYER, FAIL, code=rule,
                               detail=f"{b} (+{ob} ms) started before {a} (+{oa} ms)",
                               evidence=[Evidence(f"{b} first start +{ob} ms", sb),
                                         Evidence(f"{a} first start +{oa} ms", sa)])
    return RuleOutcome(rule, LAYER, PASS, detail=" → ".join(seq) + " in order" + "".join(f"; {t}" for t in ties),
                       evidence=[_calls_summary(ctx)])


def unexpected_specialist(ctx: Context) -> RuleOutcome:
    rule = "routing.unexpected_specialist"
    if ctx.case.expect_rejection:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="rejection case: specialist calls are judged by guardrail.leaky")
    allowed = set(ctx.case.expected_tools) | set(ctx.case.allowed_extras)
    extra = [c for c in ctx.digest.specialist_calls if c.name not in allowed]
    if extra:
        names = sorted({c.name for c in extra})
        return RuleOutcome(rule, LAYER, NEEDS_REVIEW, code=rule,
                       detail=f"specialist(s) outside expected_tools ∪ allowed_extras: {', '.join(names)}",
                       evidence=[Evidence(f"{c.name} called +{c.offset_ms} ms", c.span_id) for c in extra])
    return RuleOutcome(rule, LAYER, PASS, detail="no specialist outside the expected and allowed ones")


def hub_paraphrase(ctx: Context) -> RuleOutcome:
    rule = "routing.hub_paraphrase"
    if not ctx.is_strategy_case:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="not a strategy case")
    wanted = thresholds.tokens(ctx.case.query)
    if not wanted:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="the query names no thresholds")
    si = ctx.digest.strategy_input
    if si is None:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="no strategy call to compare (see routing.specialist_missing)")
    lost = [t for t in wanted if not thresholds.present(t, si.text)]
    if lost:
        return RuleOutcome(rule, LAYER, FAIL, code=rule,
                       detail=f"not verbatim in the hub-to-strategy input: {', '.join(lost)}",
                       evidence=[Evidence(excerpt(si.text), si.span_id),
                                 Evidence(excerpt(ctx.case.query), None, "query")])
    return RuleOutcome(rule, LAYER, PASS, detail=f"verbatim: {', '.join(wanted)}",
                   evidence=[Evidence(excerpt(si.text), si.span_id)])


def error_span(ctx: Context) -> RuleOutcome:
    rule = "trace.error_span"
    if ctx.case.expect_rejection:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="rejection case")
    errors = ctx.digest.error_spans
    if errors:
        first = errors[0]
        return RuleOutcome(rule, LAYER, FAIL, code=f"trace.error_span:{code_name(first.name)}",
                       detail=f"{len(errors)} span(s) with error_info, first {first.name}",
                       evidence=[Evidence(excerpt(f"{e.name}: {e.exception_type}: {e.message}"), e.span_id)
                                 for e in errors])
    if ctx.digest.trace_error:
        return RuleOutcome(rule, LAYER, FAIL, code=f"trace.error_span:{code_name(ctx.digest.name or 'trace')}",
                       detail="the trace itself carries error_info",
                       evidence=[Evidence("trace error_info set", ctx.digest.trace_id)])
    return RuleOutcome(rule, LAYER, PASS, detail="no span with error_info")


def false_refusal(ctx: Context) -> RuleOutcome:
    """guardrail.false_refusal: the guardrail refused a question the case expects answered."""
    rule = "guardrail.false_refusal"
    if ctx.case.expect_rejection or ctx.case.adversarial:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="the case expects a refusal" if ctx.case.expect_rejection
                           else "adversarial case: judged by the adversarial rules")
    g = ctx.digest.guardrail
    if g is not None and g.refused:
        return RuleOutcome(rule, LAYER, FAIL, code=rule,
                           detail=f"the guardrail refused an on-topic question (decision {g.decision!r})",
                           evidence=[Evidence(excerpt(g.output), g.span_id),
                                     Evidence(excerpt(ctx.answer) or "(empty answer)", None, "answer")])
    state = "no guardrail span" if g is None else "the guardrail allowed the question"
    return RuleOutcome(rule, LAYER, PASS, detail=state, evidence=[Evidence(excerpt(g.output), g.span_id)] if g else [])


# An error span comes first: when the hub or a specialist raised, what is missing after it
# is a consequence, and the verdict names the cause. So is a refusal of an on-topic question.
RULES = [error_span, false_refusal, skill_missing, skill_overload, specialist_missing, sequence_violation, unexpected_specialist,
         hub_paraphrase]


def check(ctx: Context) -> list[RuleOutcome]:
    return [rule(ctx) for rule in RULES]
