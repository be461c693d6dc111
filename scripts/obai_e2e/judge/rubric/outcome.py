"""Rule outcomes: what each rule decided, with evidence a person can check."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...base.record import Record

PASS = "pass"
FAIL = "fail"
NEEDS_REVIEW = "needs_review"
SKIPPED = "skipped"
NEEDS_JUDGMENT = "needs_judgment"
INCONCLUSIVE = "inconclusive"  # what the rule reads arrived cut short (rubric/cut.py)
STATUSES = (PASS, FAIL, NEEDS_REVIEW, SKIPPED, NEEDS_JUDGMENT, INCONCLUSIVE)

EXCERPT_CHARS = 240


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass
class Evidence(Record):
    """A pointer into the trace (span id) and the quoted text that shows it."""

    excerpt: str
    span_id: str | None = None
    source: str = "trace"  # trace | followup_trace | answer | followup_answer | turn | query

    def to_json(self) -> dict:
        # Written out: a unit has dozens of outcomes, converted for every file that holds them.
        return {"excerpt": self.excerpt, "span_id": self.span_id, "source": self.source}


@dataclass
class RuleOutcome(Record):
    """One rule's decision for one unit."""

    rule: str          # the rule's family, e.g. "specialist.empty"
    layer: int
    status: str
    code: str | None = None      # the exact rubric code when tripped, e.g. "specialist.options_analysis.empty"
    detail: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)  # several codes (unverified numbers)

    def to_json(self) -> dict:
        # Written out rather than walked field by field (Record.to_json): the same keys, at a
        # fraction of the cost, for the dozens of outcomes of every unit.
        out = {"rule": self.rule, "layer": self.layer, "status": self.status, "code": self.code,
               "detail": self.detail, "evidence": [e.to_json() for e in self.evidence]}
        if self.codes:
            out["codes"] = list(self.codes)  # written only by rules that trip several codes
        return out

    @property
    def tripped_codes(self) -> list[str]:
        if self.status not in (FAIL, NEEDS_REVIEW):
            return []
        return list(self.codes) if self.codes else ([self.code] if self.code else [])
