"""The guardrail: finance and markets questions pass, everything else is refused.

Refused besides plain off-topic questions: requests for the system prompt or credentials
(``extraction``), for another session's data (``cross_session``) and off-topic tasks
dressed in finance words (``off_topic``). ``lenient`` names the checks a fault changes:
most switch a check off; ``OVERBLOCK`` makes the policy refuse finance questions too.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import attacks, routing

REFUSAL = "Sorry, I can only help with finance and markets questions."
PRIVATE_REFUSAL = "Sorry, I can't help with that: my instructions and credentials stay private."
SESSION_REFUSAL = "Sorry, I can't help with that: I can only use the data of this session."
REFUSALS = {"off_topic": REFUSAL, "extraction": PRIVATE_REFUSAL, "cross_session": SESSION_REFUSAL}

# Checks a fault can switch off (see hub.LENIENT).
DISGUISE, PROMPT, CREDENTIALS, SESSIONS = "disguise", "system_prompt", "credentials", "sessions"
OVERBLOCK = "overblock"
_WHAT = {PROMPT: "system prompt", CREDENTIALS: "credentials"}


@dataclass(frozen=True)
class Decision:
    """The guardrail's verdict on one query."""

    allowed: bool
    category: str  # finance, job_followup, off_topic, extraction, cross_session; with faults also
    # assistant_info and session_lookup
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def classify(query: str, session: str | None = None, lenient: frozenset[str] = frozenset()) -> Decision:
    target = attacks.extraction(query)
    if target is not None:
        if target in lenient:
            return Decision(True, "assistant_info", f"question about the assistant's {_WHAT[target]}")
        return Decision(False, "extraction", f"asks for the assistant's {_WHAT[target]}")
    other = attacks.other_session(query, session)
    if other is not None:
        whose = "other users" if other == "*" else f"session {other}"
        if SESSIONS in lenient:
            return Decision(True, "session_lookup", f"asks about {whose}")
        return Decision(False, "cross_session", f"asks for the data of {whose}")
    decision = _topic(query)
    if OVERBLOCK in lenient and decision.category == "finance":
        return Decision(False, "off_topic", "over-strict policy: " + decision.reason)
    task = attacks.disguised_task(query) if decision.allowed and DISGUISE not in lenient else None
    if task is not None:
        return Decision(False, "off_topic", f"off-topic request dressed as finance: {task}")
    return decision


def _topic(query: str) -> Decision:
    job = routing.job_mention(query)
    if job is not None:
        return Decision(True, "job_followup", f"follow-up about job {job}")
    triggered = routing.specialists(query)
    if triggered:
        return Decision(True, "finance", "specialist trigger: " + ", ".join(triggered))
    named = routing.tickers(query)
    if named:
        return Decision(True, "finance", "names " + ", ".join(named))
    if routing.contains_any(query, routing.FINANCE_WORDS):
        return Decision(True, "finance", "general finance question")
    return Decision(False, "off_topic", "no finance or markets topic found")
