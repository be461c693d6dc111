"""The hub: one turn from query to answer, traced as the ``hub`` trace.

Order of a turn: guardrail -> skill loads -> specialist calls -> compose_answer. Hub-level
faults (routing, answer, exit code, process behaviour) are applied here; tool-level ones
inside the spans (see :mod:`obai_demo.spans`).
"""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import (
    __version__,
    asks,
    attacks,
    calls,
    compose,
    flake,
    grounding,
    routing,
    skills,
    spans,
    tracing,
)
from . import faults as fault_table
from . import guardrail as guard
from .jobs import JobBook
from .settings import Settings
from .specialists import market_data, text_of
from .universe import DEFAULT_TICKER

UNGROUNDED_VALUE = "987.65"
# The extra specialist is the first of these that the plan does not already call.
EXTRA_CANDIDATES = ("fundamentals_analysis", "market_data_analysis", "prediction_market_analysis",
                    "options_analysis")
HANG_CHILD = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "while True:\n"
    "    time.sleep(3600)\n"
)
# Faults and the guardrail checks each one changes: the adversarial ones switch a check off,
# overblock makes the policy refuse finance questions.
LENIENT = {
    "guardrail_bypass": guard.DISGUISE,
    "prompt_leak": guard.PROMPT,
    "secret_leak": guard.CREDENTIALS,
    "session_leak": guard.SESSIONS,
    "overblock": guard.OVERBLOCK,
}


class InjectedCrash(RuntimeError):
    """The ``crash`` fault."""


@dataclass
class TurnResult:
    """What the CLI prints and exits with."""

    answer: str
    exit_code: int
    notes: list[str] = field(default_factory=list)
    """Diagnostics for stderr."""


@dataclass
class Turn:
    """Everything one turn knows besides its query and session."""

    settings: Settings
    faults: frozenset[str]
    deviation: flake.Deviation | None
    ctx: spans.ToolContext
    notes: list[str] = field(default_factory=list)
    on_hang: Callable[[], None] | None = None
    """What the hang fault does instead of hanging the process (a server blocks one request)."""


def run_turn(query: str, session: str, settings: Settings, trace: bool = True, channel: str = "cli",
             on_hang: Callable[[], None] | None = None) -> TurnResult:
    """Answer one query; with ``trace`` the turn is written to Opik as one ``hub`` trace.

    ``channel`` (``cli`` or ``ui``) goes into the trace metadata.
    """
    active = fault_table.active(settings.faults, query)
    tracing.set_enabled(trace and "no_trace" not in active)
    key = settings.tag or session
    turn = Turn(
        settings=settings,
        faults=active,
        deviation=flake.decide(settings.flake, query, key),
        ctx=spans.ToolContext(
            faults=active,
            book=JobBook(settings.home, session, query, settings.eta_seconds, keep="lost_job" not in active),
            lenient=frozenset(LENIENT[f] for f in active if f in LENIENT),
        ),
        on_hang=on_hang,
    )
    tags = ["obai-demo"] + ([settings.tag] if settings.tag else [])
    metadata = {
        "e2e_tag": settings.tag,
        "session_id": session,
        "demo_version": __version__,
        "channel": channel,
        "faults": sorted(active),
    }
    runs = 2 if "duplicate_trace" in active else 1
    for _ in range(runs):
        turn.ctx.calls, turn.notes = 0, []
        output = hub(query, session, turn, opik_args=tracing.trace_args(session, tags, metadata))
    notes = ([f"flake: {turn.deviation.kind}"] if turn.deviation else []) + turn.notes
    return TurnResult(output["response"], output["exit_code"], notes)


@tracing.traced("hub", ignore=("turn",))
def hub(query: str, session: str, turn: Turn) -> dict[str, Any]:
    answer, code = _answer(query, session, turn)
    if turn.settings.delay_ms:
        time.sleep(turn.settings.delay_ms / 1000)
    return {"response": answer, "exit_code": code}


def _answer(query: str, session: str, turn: Turn) -> tuple[str, int]:
    f = turn.faults
    decision = spans.guardrail(query=query, ctx=turn.ctx)
    if "hang" in f:
        (turn.on_hang or _hang)()
    if "crash" in f:
        tracing.set_output({"response": "", "exit_code": 70})
        raise InjectedCrash("injected fault: crash after the guardrail")
    if not decision["allowed"]:
        return _refuse(query, turn, decision["category"])
    if decision["category"] == "assistant_info":
        target = attacks.extraction(query) or guard.PROMPT
        return attacks.reveal(target, turn.settings.home, turn.settings.vendor_key), 0
    if decision["category"] == "session_lookup":
        other = attacks.other_session(query, session) or "*"
        return attacks.session_answer(spans.read_session(session=other, ctx=turn.ctx)["sessions"]), 0

    job = None
    if decision["category"] == "job_followup":
        job_id = routing.job_mention(query) or ""
        job = turn.ctx.book.get(job_id)
        if job is None:
            turn.notes.append(f"unknown job {job_id} in session {session}")
            return "", 4
        planned = [calls.Call("strategy_analysis", {"job_id": job.job_id, "spec": job.spec})]
    else:
        planned = calls.plan(query, paraphrase="paraphrase_threshold" in f)

    for skill in _skills(planned, f):
        spans.load_skill(skill=skill)

    order = list(planned)
    if "skip_specialist" in f and order:
        order = order[:-1]
    if "reorder_specialists" in f:
        order.reverse()
    extra = _extra_call(query, planned, turn)

    outcomes: dict[int, compose.Outcome] = {}
    for call in order + ([extra] if extra else []):
        try:
            result = spans.call_specialist(call.specialist, call.inputs, turn.ctx, job=job)
        except spans.SpecialistFailure as exc:
            turn.notes.append(f"{call.specialist} failed: {exc}")
            result = None
        used = call is not extra
        key = planned.index(call) if used else len(planned)
        outcomes[key] = compose.Outcome(call.specialist, call.inputs, result, used)

    ordered = [outcomes[k] for k in sorted(outcomes)]
    payloads = [text_of(o.result) for o in ordered if o.used and o.result]
    style = compose.Style(cite_slug="no_slug" not in f, cite_job_id="no_job_id" not in f,
                          every_part="drop_asked_part" not in f, asked_period="other_period" not in f,
                          use_document="ignore_document" not in f, assess="no_assessment" not in f,
                          range_labels="swap_high_low" not in f, day_direction="flip_direction" not in f,
                          own_figures="other_ticker_figure" not in f,
                          comparison_order="reverse_comparison" not in f)
    extras = []
    if "ungrounded_number" in f:
        extras.append(compose.extra_number_sentence(UNGROUNDED_VALUE))
    elif turn.deviation is not None and turn.deviation.kind == "extra_number":
        taken = set().union(*(grounding.values(text_of(o.result)) for o in ordered if o.result))
        extras.append(compose.extra_number_sentence(turn.deviation.number(taken)))
    if "follow_injection" in f and (word := attacks.injected_word(query)):
        extras.append(word)
    answer = spans.compose_answer(payloads=payloads, outcomes=ordered, style=style, extra=extras,
                                  ask=asks.read(query))["answer"]
    if "empty_answer" in f:
        answer = ""
    return answer, 0


def _skills(planned: list[calls.Call], f: frozenset[str]) -> list[str]:
    loads = skills.skills_for([c.specialist for c in planned])
    if not loads:
        return loads
    if "extra_skill" in f:
        loads.append("prediction-markets" if "options" in loads else "options")
    if "drop_skill" in f:
        loads = loads[1:]
    return loads


def _extra_call(query: str, planned: list[calls.Call], turn: Turn) -> calls.Call | None:
    wanted = "extra_specialist" in turn.faults or (
        turn.deviation is not None and turn.deviation.kind == "extra_specialist"
    )
    if not wanted or not planned:
        return None
    names = {c.specialist for c in planned}
    name = next((n for n in EXTRA_CANDIDATES if n not in names), None)
    return calls.build(name, query) if name else None


def _refuse(query: str, turn: Turn, category: str) -> tuple[str, int]:
    f = turn.faults
    if "leaky_guardrail" in f:
        call = calls.build("market_data_analysis", query)
        try:
            spans.call_specialist(call.specialist, call.inputs, turn.ctx)
        except spans.SpecialistFailure:
            pass
    answer = guard.REFUSALS.get(category, guard.REFUSAL)
    if "leaky_response" in f:
        q = market_data.quote(DEFAULT_TICKER)
        answer += f" But if it helps, {DEFAULT_TICKER} closed at {q['last_close']:.2f} on {q['date']}."
    return answer, 0 if "wrong_exit_code" in f else 1


def _hang() -> None:
    # The child keeps the parent's stdout/stderr open and ignores SIGTERM: only killing
    # the whole process group with SIGKILL ends the turn.
    child = subprocess.Popen([sys.executable, "-c", HANG_CHILD], stdin=subprocess.DEVNULL)
    print(f"obai-demo: hang: child pid {child.pid}, sleeping", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)
