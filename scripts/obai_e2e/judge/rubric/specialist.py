"""Layer 2 — specialist output, read from the curated trace(s).

guardrail.leaky (rejection cases, checked first; the rest of the layer is skipped
then), specialist.<name>.tool_error, specialist.<name>.empty,
specialist.strategy.contract_broken / zero_trades (or, for async jobs,
async_stub_broken / async_followup_missing and the follow-up's contract),
specialist.prediction.no_slug, specialist.options.math.
"""
from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation

from ...base import jsonptr
from ...base.patterns import Pattern
from ...config.pointers import under
from ...config.sections import StrategyLabels
from ...trace.digest import SpecialistCall, TraceDigest
from .codes import specialist_name
from .context import Context
from .numbers import extract
from .outcome import FAIL, PASS, SKIPPED, Evidence, RuleOutcome, excerpt

LAYER = 2

_CONDITION_ID = re.compile(r"\b0x[0-9a-fA-F]{64}\b")
# A slug has letters: dates such as 2026-12-16 are not slugs.
_SLUG = re.compile(r"\b(?=[a-z0-9-]*[a-z])[a-z0-9]+(?:-[a-z0-9]+){2,}\b")


def _skip_all(reason: str, *rules: str) -> list[RuleOutcome]:
    return [RuleOutcome(r, LAYER, SKIPPED, detail=reason) for r in rules]


def guardrail_leaky(ctx: Context) -> RuleOutcome:
    rule = "guardrail.leaky"
    g = ctx.digest.guardrail
    calls = ctx.digest.specialist_calls
    if g is None or not g.refused:
        state = "no guardrail span" if g is None else "the guardrail did not refuse"
        ev = [Evidence(excerpt(g.output), g.span_id)] if g else [Evidence("GUARDRAIL: (no guardrail span)")]
        return RuleOutcome(rule, LAYER, FAIL, code=rule, detail=f"rejection expected but {state}", evidence=ev)
    if calls:
        return RuleOutcome(rule, LAYER, FAIL, code=rule,
                       detail=f"the guardrail refused, yet {len(calls)} specialist call(s) ran",
                       evidence=[Evidence(f"{c.name} called +{c.offset_ms} ms", c.span_id) for c in calls])
    return RuleOutcome(rule, LAYER, PASS, detail="guardrail refused; no specialist ran",
                   evidence=[Evidence(excerpt(g.output), g.span_id)])


def _admits_failure(ctx: Context) -> bool:
    return any(p.search(ctx.answer or "") for p in ctx.config.failure_ack_patterns)


def _error_detail(c: SpecialistCall) -> str:
    if c.suspect_error:
        return (f"{c.name} returned what looks like an error ({c.suspect_error}), in a shape the target "
                "configuration does not declare (vocabulary.specialist_output.errors), and the answer does not "
                "mention a failure")
    if c.error_shape:
        return f"{c.name} reported an error ({c.error_shape})"
    return f"{c.name} returned an error envelope"


def tool_output(ctx: Context) -> list[RuleOutcome]:
    """specialist.<name>.tool_error and specialist.<name>.empty, per call in start order.

    An output that only looks like an error (a shape the target did not declare) fails
    when the answer reads as if nothing went wrong; when the answer admits the failure,
    the suspicion is kept in the rule's detail and the output is judged for content.
    """
    errors, empties, admitted = [], [], []
    for c in ctx.digest.specialist_calls:
        if c.is_error:
            errors.append(c)
            continue
        if c.suspect_error:
            if not _admits_failure(ctx):
                errors.append(c)
                continue
            admitted.append(c)
        if c.empty and not c.has_error_info:
            empties.append(c)
    out = []
    if errors:
        c = errors[0]
        out.append(RuleOutcome("specialist.tool_error", LAYER, FAIL, code=f"specialist.{specialist_name(c.name)}.tool_error",
                           detail=_error_detail(c),
                           evidence=[Evidence(excerpt(c.error_text or c.payload_text), c.span_id)]))
    elif admitted:
        c = admitted[0]
        out.append(RuleOutcome("specialist.tool_error", LAYER, PASS,
                               detail=f"{c.name} looks like it failed ({c.suspect_error}) and the answer says so",
                               evidence=[Evidence(excerpt(c.payload_text), c.span_id),
                                         Evidence(excerpt(ctx.answer), None, "answer")]))
    else:
        out.append(RuleOutcome("specialist.tool_error", LAYER, PASS, detail="no error envelope"))
    if empties:
        c = empties[0]
        out.append(RuleOutcome("specialist.empty", LAYER, FAIL, code=f"specialist.{specialist_name(c.name)}.empty",
                           detail=f"{c.name} returned no content",
                           evidence=[Evidence(excerpt(c.payload_text or "(no output)"), c.span_id)]))
    else:
        out.append(RuleOutcome("specialist.empty", LAYER, PASS, detail="every specialist returned content"))
    return out


def contract(digest: TraceDigest | None, strategy: str, source: str, labels: StrategyLabels, *,
             required: bool = False) -> list[RuleOutcome]:
    """The strategy contract (Verdict, operators, Total trades, as ``labels`` find them) and the zero-trades rule.

    Without a strategy call the rules are skipped (routing.specialist_missing names it),
    unless the turn had to deliver the result (``required``: an async follow-up).
    """
    calls = digest.calls_of(strategy) if digest else []
    if not calls and not required:
        return _skip_all(f"no {strategy} call (see routing.specialist_missing)",
                         "specialist.strategy.contract_broken", "specialist.strategy.zero_trades")
    if not calls:
        return [RuleOutcome("specialist.strategy.contract_broken", LAYER, FAIL, code="specialist.strategy.contract_broken",
                        detail=f"no {strategy} output to check", evidence=[Evidence("(no strategy call)", None, source)]),
                RuleOutcome("specialist.strategy.zero_trades", LAYER, SKIPPED, detail="no strategy output")]
    call = calls[-1]
    text = call.output_text
    lacking = []
    if not labels.verdict.search(text):
        lacking.append("Verdict")
    if not labels.operators.search(text):
        lacking.append("operator list")
    trades = labels.total_trades.search(text)
    if not trades:
        lacking.append("Total trades line")
    ev = [Evidence(excerpt(text), call.span_id, source)]
    if lacking:
        return [RuleOutcome("specialist.strategy.contract_broken", LAYER, FAIL, code="specialist.strategy.contract_broken",
                        detail=f"strategy output lacks: {', '.join(lacking)}", evidence=ev),
                RuleOutcome("specialist.strategy.zero_trades", LAYER, SKIPPED if not trades else PASS,
                        detail="no Total trades line" if not trades else f"Total trades: {trades.group(1)}")]
    out = [RuleOutcome("specialist.strategy.contract_broken", LAYER, PASS, detail="Verdict, operators and Total trades present",
                   evidence=ev)]
    if int(trades.group(1)) == 0:
        out.append(RuleOutcome("specialist.strategy.zero_trades", LAYER, FAIL, code="specialist.strategy.zero_trades",
                           detail="the backtest made no trades", evidence=[Evidence(trades.group(0).strip(), call.span_id, source)]))
    else:
        out.append(RuleOutcome("specialist.strategy.zero_trades", LAYER, PASS, detail=trades.group(0).strip()))
    return out


def strategy(ctx: Context) -> list[RuleOutcome]:
    """The strategy contract of a strategy case; the async rules of any case that expects an async job."""
    name = ctx.vocab.strategy_specialist
    labels = ctx.config.strategy_labels
    rules = ("specialist.strategy.async_stub_broken", "specialist.strategy.async_followup_missing")
    if not ctx.is_strategy_case and not ctx.case.expect_async_job:
        return _skip_all("not a strategy case", "specialist.strategy.contract_broken",
                         "specialist.strategy.zero_trades", *rules)
    if not ctx.case.expect_async_job:
        return contract(ctx.digest, name, "trace", labels) + _skip_all("not an async job case", *rules)
    a = ctx.config.async_jobs
    out = []
    job, eta = a.job_id_pattern.search(ctx.answer or ""), a.eta_pattern.search(ctx.answer or "")
    if not (job and eta):
        lacking = [w for w, m in (("Job ID", job), ("numeric ETA", eta)) if not m]
        out.append(RuleOutcome(rules[0], LAYER, FAIL, code=rules[0], detail=f"first answer lacks: {', '.join(lacking)}",
                           evidence=[Evidence(excerpt(ctx.answer) or "(empty answer)", None, "answer")]))
    else:
        out.append(RuleOutcome(rules[0], LAYER, PASS, detail=f"job {job.group(1)}, ETA {eta.group(1)} s",
                           evidence=[Evidence(excerpt(ctx.answer), None, "answer")]))
    if ctx.packet.followup is None:
        why = ctx.packet.followup_error or "no follow-up was recorded"
        out.append(RuleOutcome(rules[1], LAYER, FAIL, code=rules[1], detail=why,
                           evidence=[Evidence(excerpt(why), None, "turn")]))
        out += _skip_all("no follow-up", "specialist.strategy.contract_broken", "specialist.strategy.zero_trades")
        return out
    out.append(RuleOutcome(rules[1], LAYER, PASS, detail="follow-up turn recorded",
                       evidence=[Evidence(excerpt(ctx.followup_answer), None, "followup_answer")]))
    if not ctx.is_strategy_case:
        return out + _skip_all("the job is not a strategy specialist's", "specialist.strategy.contract_broken",
                               "specialist.strategy.zero_trades")
    return out + contract(ctx.followup_digest, name, "followup_trace", labels, required=True)


def prediction(ctx: Context) -> RuleOutcome:
    rule = "specialist.prediction.no_slug"
    if not ctx.is_prediction_case:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="not a prediction-market case")
    calls = ctx.digest.calls_of(ctx.vocab.prediction_specialist)
    if not calls:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="no prediction call (see routing.specialist_missing)")
    ids: set[str] = set()
    for c in calls:
        ids |= set(_CONDITION_ID.findall(c.payload_text))
        ids |= set(_SLUG.findall(c.output_text))
        ids |= set(re.findall(r'"slug"\s*:\s*"([^"]+)"', c.payload_text))
    cited = sorted(i for i in ids if i in (ctx.answer or ""))
    if cited:
        return RuleOutcome(rule, LAYER, PASS, detail=f"cites {', '.join(cited)}",
                       evidence=[Evidence(excerpt(ctx.answer), None, "answer")])
    detail = ("the answer cites no slug or condition id from the payload" if ids
              else "the prediction payload names no slug or condition id")
    ev = [Evidence(excerpt(ctx.answer) or "(empty answer)", None, "answer")]
    if calls:
        ev.append(Evidence(excerpt(calls[0].output_text), calls[0].span_id))
    return RuleOutcome(rule, LAYER, FAIL, code=rule, detail=detail, evidence=ev)


def _labelled(label: Pattern, text: str) -> list[str]:
    """For each line where ``label`` occurs: the line from the label on."""
    out = []
    for line in text.splitlines():
        m = label.search(line)
        if m:
            out.append(line[m.start():])
    return out


def _breakevens(lines: list[str]) -> list[str]:
    values = []
    for line in lines:
        for n in extract(line, skip_list_markers=False):
            if n.text not in values:
                values.append(n.text)
    return values


def _number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        Decimal(str(value).replace(",", "").strip().lstrip("$"))
    except (InvalidOperation, ValueError):
        return False
    return True


def _from_payload(ctx: Context, call: SpecialistCall) -> tuple[bool, bool, list[str]] | None:
    """(unlimited loss, capped loss, break-evens) from the structured payload, when it has them."""
    v = ctx.vocab
    if v.options_max_loss is None or v.options_breakevens is None:
        return None
    try:
        output = json.loads(call.payload_text)
    except ValueError:
        return None
    # The pointers start at the span; payload_text is the span's output.
    loss = jsonptr.resolve(output, under(v.options_max_loss, "output"))
    evens = jsonptr.resolve(output, under(v.options_breakevens, "output"))
    if loss is jsonptr.MISSING or not isinstance(evens, list):
        return None
    unlimited = isinstance(loss, str) and bool(ctx.config.options_labels.unlimited.search(loss))
    capped = not unlimited and loss is not None and _number(loss)
    return unlimited, capped, [str(e) for e in dict.fromkeys(map(str, evens))]


def options(ctx: Context) -> RuleOutcome:
    rule = "specialist.options.math"
    shape = ctx.case.expect_options_shape
    if not shape:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="no option shape expected")
    calls = ctx.digest.calls_of(ctx.vocab.options_specialist)
    if not calls:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="no options call (see routing.specialist_missing)")
    call = calls[-1]
    text = call.output_text
    labels = ctx.config.options_labels
    read = _from_payload(ctx, call)
    if read is not None:
        unlimited_loss, capped_loss, bes = read
        source = "payload"
    else:
        loss_lines = _labelled(labels.max_loss, text)
        unlimited_loss = any(labels.unlimited.search(line) for line in loss_lines)
        capped_loss = any(not labels.unlimited.search(line) and extract(line) for line in loss_lines)
        bes = _breakevens(_labelled(labels.breakeven, text))
        source = "text"
    problems = []
    if shape == "naked_short_call":
        if not unlimited_loss:
            problems.append("a naked short call must show an unlimited max loss")
    elif shape in ("iron_condor", "long_straddle"):
        if len(bes) != 2:
            problems.append(f"{shape.replace('_', ' ')} must show two breakevens (found {len(bes)}: {', '.join(bes) or 'none'})")
        if unlimited_loss or not capped_loss:
            problems.append(f"{shape.replace('_', ' ')} must show a capped max loss")
    ev = [Evidence(excerpt(text if source == "text" else call.payload_text), call.span_id)]
    if problems:
        where = " (read from the structured payload)" if source == "payload" else ""
        return RuleOutcome(rule, LAYER, FAIL, code=rule, detail="; ".join(problems) + where, evidence=ev)
    return RuleOutcome(rule, LAYER, PASS, detail=f"{shape}: payoff shape consistent", evidence=ev)


def check(ctx: Context) -> list[RuleOutcome]:
    if ctx.case.expect_rejection:
        return [guardrail_leaky(ctx)] + _skip_all(
            "rejection case: the rest of layer 2 does not apply",
            "specialist.tool_error", "specialist.empty", "specialist.strategy.contract_broken",
            "specialist.strategy.zero_trades", "specialist.strategy.async_stub_broken",
            "specialist.strategy.async_followup_missing", "specialist.prediction.no_slug",
            "specialist.options.math")
    out = [RuleOutcome("guardrail.leaky", LAYER, SKIPPED, detail="not a rejection case")]
    out += tool_output(ctx)
    out += strategy(ctx)
    out.append(prediction(ctx))
    out.append(options(ctx))
    return out
