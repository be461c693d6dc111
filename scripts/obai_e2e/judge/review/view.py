"""One unit as its judge reviews it: what is needed to judge it, each thing once.

Enters: a unit's packet, its mechanical check, the panel's result and the codes its
verdict admits. Leaves: :class:`UnitView`, printed as plain text (the default: fewer
tokens for the same content, since a trace's lines need no escaping) or as JSON. It holds
the question, the answer (bounded), the curated trace without what is shown elsewhere,
only the failed and soft rules with their evidence, the count of the others, the open
questions and the panel's decisions. A unit with nothing left to judge (no failed or soft
rule, no open question) gets the short form: its question and answer, without the trace.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ...config.units import Unit
from ...drive.packet_record import Packet
from ..open_questions import open_questions
from ..rubric.check import CheckResult
from ..rubric.outcome import FAIL, NEEDS_REVIEW, PASS, SKIPPED
from .trace_text import compact_trace

ANSWER_CHARS = 2000
SHORT_ANSWER_CHARS = 600
TRACE_CHARS = 6000
EVIDENCE_PER_RULE = 20


def bounded(text: str, limit: int, unit_id: str) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > limit // 2 else limit
    return text[:cut] + f"\n… [cut: {len(text) - cut} more characters; review.py --id {unit_id} --full shows all]"


def _evidence(ev) -> str:
    where = f"span {ev.span_id} ({ev.source})" if ev.span_id else f"({ev.source})"
    return f"{where}: {json.dumps(ev.excerpt, ensure_ascii=False)}"


@dataclass
class UnitView:
    """What the judge of one unit reads."""

    unit: str
    feature: str
    rules: str                       # "fail specialist.strategy.zero_trades" / "pass" / "inconclusive trace_not_found"
    counts: str                      # "13 passed, 7 skipped"
    question: str
    answer: str
    admissible: str = ""             # a key of the page's legend, or what an inconclusive unit admits
    trace: str | None = None
    followup: dict | None = None     # question, answer, trace of an async unit's follow-up
    findings: list[dict] = field(default_factory=list)  # failed and soft rules: status, code, detail, evidence
    open: list[str] = field(default_factory=list)
    panel: list[str] = field(default_factory=list)      # "hub.incomplete_answer: complete (complete 3)"
    infra: str | None = None

    @property
    def needs_judgment(self) -> bool:
        return bool(self.findings or self.open)

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", [], {})}

    def text(self) -> str:
        head = f"## {self.unit} ({self.feature}) · rules: {self.rules}"
        lines = [head + (f" · {self.counts}" if self.counts else ""), f"question: {self.question}", "answer:"]
        lines += ["  " + line for line in (self.answer or "(empty)").splitlines()]
        if self.infra:
            lines.append(f"why: {self.infra}")
        if self.trace is not None:
            lines += ["trace:", self.trace]
        if self.followup:
            lines.append(f"follow-up question: {self.followup['question']}")
            lines.append("follow-up answer:")
            lines += ["  " + line for line in (self.followup["answer"] or "(empty)").splitlines()]
            if self.followup.get("trace"):
                lines += ["follow-up trace:", self.followup["trace"]]
        if self.findings:
            lines.append("failed or soft:")
            for f in self.findings:
                lines.append(f"  {f['status']} {f['code']}: {f['detail']}")
                lines += [f"    {e}" for e in f["evidence"]]
        if self.open:
            lines.append("open: " + ", ".join(self.open))
        lines += [f"panel: {p}" for p in self.panel]
        if self.admissible:
            lines.append(f"admissible: {self.admissible}")
        return "\n".join(lines)


def _panel_lines(panel: dict | None) -> list[str]:
    out = []
    for q, v in sorted(((panel or {}).get("questions") or {}).items()):
        votes = ", ".join(f"{k} {n}" for k, n in sorted((v.get("votes") or {}).items())) or "no vote"
        state = f"decided {v.get('majority')}" if v.get("decided") else "undecided"
        out.append(f"{q}: {state} ({votes})")
    return out


def unit_view(unit: Unit, packet: Packet, check: CheckResult, panel: dict | None, admissible: str,
              *, short: bool = True) -> UnitView:
    """The view of ``unit``; ``short`` False keeps the trace even when nothing is left to judge."""
    statuses = [o.status for o in check.outcomes]
    counts = f"{statuses.count(PASS)} passed, {statuses.count(SKIPPED)} skipped"
    rules = check.verdict + (" " + ", ".join(check.reasons) if check.reasons else "")
    view = UnitView(unit=unit.id, feature=unit.case.feature, rules=rules, counts=counts if check.outcomes else "",
                    question=packet.query or unit.case.query, answer="", admissible=admissible,
                    open=open_questions(check, panel), panel=_panel_lines(panel))
    if check.infra:
        view.infra = f"{check.infra['reason']}: {check.infra.get('message') or ''}".strip(": ")
    for o in check.outcomes:
        if o.status in (FAIL, NEEDS_REVIEW):
            code = ", ".join(o.tripped_codes) or o.rule
            shown = [_evidence(e) for e in o.evidence[:EVIDENCE_PER_RULE]]
            if len(o.evidence) > EVIDENCE_PER_RULE:
                shown.append(f"… {len(o.evidence) - EVIDENCE_PER_RULE} more (review.py --id {unit.id} --full)")
            view.findings.append({"status": o.status, "code": code, "detail": o.detail, "evidence": shown})
    full = view.needs_judgment or not short
    if not full:
        view.admissible = ""  # nothing to judge: the verdict the rules imply is the one to confirm
    view.answer = bounded(packet.answer, ANSWER_CHARS if full else SHORT_ANSWER_CHARS, unit.id)
    if full and packet.trace.curated:
        view.trace = bounded(compact_trace(packet.trace.curated, packet.answer), TRACE_CHARS, unit.id)
    follow = packet.followup
    if follow is not None:
        view.followup = {"question": follow.query, "answer": bounded(follow.answer, ANSWER_CHARS, unit.id)}
        if full and follow.trace.curated:
            view.followup["trace"] = bounded(compact_trace(follow.trace.curated, follow.answer), TRACE_CHARS,
                                             unit.id)
    return view
