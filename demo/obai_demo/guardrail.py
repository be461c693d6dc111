"""The topic guardrail: finance and markets questions pass, everything else is refused."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import routing

REFUSAL = "Sorry, I can only help with finance and markets questions."


@dataclass(frozen=True)
class Decision:
    """The guardrail's verdict on one query."""

    allowed: bool
    category: str  # "finance", "off_topic" or "job_followup"
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def classify(query: str) -> Decision:
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
