"""Layer 4 — the ui channel: what the web UI showed of an answer the trace says the agent gave.

ui.answer_not_rendered, ui.raw_markup and ui.error_banner (hard), ui.slow_first_token and
ui.slow_done (soft, against the latency budget of target.yaml). A unit on the cli channel
has none of these rules. During an upstream outage every rule is skipped: its categories
are then not assessable, never loss.
"""
from __future__ import annotations

import html
import re

from .context import Context
from .outcome import FAIL, NEEDS_REVIEW, PASS, SKIPPED, Evidence, RuleOutcome, excerpt

LAYER = 4
RULES = ("ui.answer_not_rendered", "ui.raw_markup", "ui.error_banner", "ui.slow_first_token", "ui.slow_done")
_TAG = re.compile(r"<[^<>]+>")
_SPACE = re.compile(r"\s+")


def _plain(text: str) -> str:
    """Text as a reader sees it once markup is stripped: entities decoded, tags out, spaces collapsed.

    Both sides of a comparison go through it, so a ``<`` of the answer itself is treated alike.
    """
    return _SPACE.sub(" ", _TAG.sub(" ", html.unescape(text or ""))).strip()


def answer_not_rendered(ctx: Context, shown: str, final: str) -> RuleOutcome:
    rule = "ui.answer_not_rendered"
    ui = ctx.packet.ui
    if ui.state != "done":
        return RuleOutcome(rule, LAYER, FAIL, code=rule, detail=f"the answer never finished on the page ({ui.state})",
                           evidence=[Evidence(excerpt(shown) or "(nothing shown)", None, "answer")])
    plain = _plain(shown)
    missing = [line for line in (l.strip() for l in final.splitlines()) if line and _plain(line) not in plain]
    if missing:
        return RuleOutcome(rule, LAYER, FAIL, code=rule,
                           detail=f"{len(missing)} line(s) of the agent's answer are not on the page",
                           evidence=[Evidence(excerpt(missing[0]), ctx.digest.hub_span_id, "trace"),
                                     Evidence(excerpt(shown) or "(nothing shown)", None, "answer")])
    return RuleOutcome(rule, LAYER, PASS, detail=f"the page shows the agent's answer ({len(shown)} characters)")


def raw_markup(ctx: Context, shown: str, final: str) -> RuleOutcome:
    rule = "ui.raw_markup"
    for pattern in ctx.config.ui.markup_patterns if ctx.config.ui else ():
        m = pattern.search(shown)
        if m and not pattern.search(final):
            return RuleOutcome(rule, LAYER, FAIL, code=rule, detail=f"the page shows markup as text: {m.group(0)!r}",
                               evidence=[Evidence(excerpt(shown[max(0, m.start() - 60): m.end() + 60]), None,
                                                  "answer")])
    return RuleOutcome(rule, LAYER, PASS, detail="no markup shown as text")


def error_banner(ctx: Context) -> RuleOutcome:
    rule = "ui.error_banner"
    banner = ctx.packet.ui.banner
    if banner:
        return RuleOutcome(rule, LAYER, FAIL, code=rule, detail="the page shows an error banner while the backend is up",
                           evidence=[Evidence(excerpt(banner), None, "turn")])
    return RuleOutcome(rule, LAYER, PASS, detail="no error banner")


def _latency(rule: str, measured: int | None, budget: float | None, what: str) -> RuleOutcome:
    if budget is None:
        return RuleOutcome(rule, LAYER, SKIPPED, detail="no latency budget configured (ui.latency_budget_ms)")
    if measured is None:
        return RuleOutcome(rule, LAYER, SKIPPED, detail=f"no {what} was observed")
    if measured > budget:
        return RuleOutcome(rule, LAYER, NEEDS_REVIEW, code=rule,
                           detail=f"{what} took {measured} ms, over the budget of {budget:g} ms",
                           evidence=[Evidence(f"{what}: {measured} ms (budget {budget:g} ms)", None, "turn")])
    return RuleOutcome(rule, LAYER, PASS, detail=f"{what} {measured} ms (budget {budget:g} ms)")


def check(ctx: Context) -> list[RuleOutcome]:
    ui = ctx.packet.ui
    if ctx.packet.channel != "ui" or ui is None:
        return []
    if ui.outage:
        why = f"upstream outage: {ui.outage_reason or 'the UI or its backend is down'}; not scored"
        return [RuleOutcome(rule, LAYER, SKIPPED, detail=why) for rule in RULES]
    shown = ui.answer or ""
    final = (ctx.digest.final_response if ctx.digest and ctx.digest.final_response is not None else ctx.answer) or ""
    budget = ctx.config.ui
    return [
        answer_not_rendered(ctx, shown, final),
        raw_markup(ctx, shown, final),
        error_banner(ctx),
        _latency("ui.slow_first_token", ui.first_token_ms, budget.first_token_budget_ms if budget else None,
                 "the first text of the answer"),
        _latency("ui.slow_done", ui.done_ms, budget.done_budget_ms if budget else None, "the finished answer"),
    ]
