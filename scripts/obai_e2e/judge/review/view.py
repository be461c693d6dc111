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

from ...base.modeltext import INLINE_CHARS, block, field as labelled, inline, json_safe, listing
from ...config.units import Unit
from ...drive.packet_record import Packet
from ..open_questions import open_questions
from ..rubric.check import CheckResult
from ..rubric.outcome import FAIL, NEEDS_REVIEW, PASS, SKIPPED
from .trace_text import compact_trace

ANSWER_CHARS = 2000
SHORT_ANSWER_CHARS = 600
TRACE_CHARS = 6000
QUESTION_CHARS = 1000
DETAIL_CHARS = 400        # a rule's detail, an inconclusive unit's why
EVIDENCE_CHARS = 300      # one evidence line
EVIDENCE_PER_RULE = 20
CODES_SHOWN = 20          # tripped codes on the unit's header and on a finding
OPEN_SHOWN = 50           # open questions on the open: line
PANEL_SHOWN = 20          # panel: lines


def _evidence(ev) -> str:
    where = f"span {ev.span_id} ({ev.source})" if ev.span_id else f"({ev.source})"
    return inline(f"{where}: {json.dumps(ev.excerpt, ensure_ascii=False)}", EVIDENCE_CHARS)


@dataclass
class UnitView:
    """What the judge of one unit reads: the values as they are; :meth:`text` and :meth:`to_json`
    show each as data, bounded (base/modeltext)."""

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
    answer_chars: int = ANSWER_CHARS

    @property
    def needs_judgment(self) -> bool:
        return bool(self.findings or self.open)

    def _hint(self) -> str:
        return f"review.py --id {self.unit} --full shows all"

    def to_json(self) -> dict:
        limits = {"answer": self.answer_chars, "trace": TRACE_CHARS, "question": QUESTION_CHARS,
                  "followup": TRACE_CHARS, "findings": DETAIL_CHARS, "infra": DETAIL_CHARS}
        out = {}
        for k, v in self.__dict__.items():
            if v in (None, "", [], {}) or k == "answer_chars":
                continue
            if k in ("open", "panel"):
                shown = OPEN_SHOWN if k == "open" else PANEL_SHOWN
                v = v[:shown] + ([f"… and {len(v) - shown:,} more (shown: {shown})"] if len(v) > shown else [])
            out[k] = json_safe(v, limits.get(k, INLINE_CHARS), one_line=False)
        return out

    def _qa(self, prefix: str, question: str, answer: str, trace: str | None) -> list[str]:
        lines = [labelled(f"{prefix}question", question, QUESTION_CHARS), f"{prefix}answer:",
                 block(answer, self.answer_chars, empty="(empty)", hint=self._hint())]
        if prefix == "" and self.infra:
            lines.append(f"why: {inline(self.infra, DETAIL_CHARS)}")
        if trace is not None:
            lines += [f"{prefix}trace:", block(trace, TRACE_CHARS, hint=self._hint())]
        return lines

    def text(self) -> str:
        head = f"## {self.unit} ({self.feature}) · rules: {self.rules}"
        lines = [head + (f" · {self.counts}" if self.counts else "")]
        lines += self._qa("", self.question, self.answer, self.trace)
        if self.followup:
            lines += self._qa("follow-up ", self.followup["question"], self.followup["answer"],
                              self.followup.get("trace"))
        if self.findings:
            lines.append("failed or soft:")
            for f in self.findings:
                lines.append(f"  {f['status']} {f['code']}: {inline(f['detail'], DETAIL_CHARS)}")
                lines += [f"    {e}" for e in f["evidence"]]
        if self.open:
            lines.append("open: " + listing(self.open, OPEN_SHOWN, hint="answer each in the verdict; "
                                            f"review.py --id {self.unit} --full lists all"))
        lines += [f"panel: {p}" for p in self.panel[:PANEL_SHOWN]]
        if len(self.panel) > PANEL_SHOWN:
            lines.append(f"panel: … and {len(self.panel) - PANEL_SHOWN:,} more (shown: {PANEL_SHOWN})")
        if self.admissible:
            lines.append(f"admissible: {self.admissible}")
        return "\n".join(lines)


def _panel_lines(panel: dict | None) -> list[str]:
    out = []
    for q, v in sorted(((panel or {}).get("questions") or {}).items()):
        votes = ", ".join(f"{k} {n}" for k, n in sorted((v.get("votes") or {}).items())) or "no vote"
        state = f"decided {v.get('majority')}" if v.get("decided") else "undecided"
        out.append(f"{inline(q)}: {inline(state)} ({inline(votes)})")
    return out


def unit_view(unit: Unit, packet: Packet, check: CheckResult, panel: dict | None, admissible: str,
              *, short: bool = True) -> UnitView:
    """The view of ``unit``; ``short`` False keeps the trace even when nothing is left to judge."""
    statuses = [o.status for o in check.outcomes]
    counts = f"{statuses.count(PASS)} passed, {statuses.count(SKIPPED)} skipped"
    rules = check.verdict + (" " + listing(check.reasons, CODES_SHOWN) if check.reasons else "")
    view = UnitView(unit=unit.id, feature=unit.case.feature, rules=rules, counts=counts if check.outcomes else "",
                    question=packet.query or unit.case.query, answer="", admissible=admissible,
                    open=open_questions(check, panel), panel=_panel_lines(panel))
    if check.infra:
        view.infra = f"{check.infra['reason']}: {check.infra.get('message') or ''}".strip(": ")
    for o in check.outcomes:
        if o.status in (FAIL, NEEDS_REVIEW):
            code = listing(o.tripped_codes, CODES_SHOWN) or o.rule
            shown = [_evidence(e) for e in o.evidence[:EVIDENCE_PER_RULE]]
            if len(o.evidence) > EVIDENCE_PER_RULE:
                shown.append(f"… {len(o.evidence) - EVIDENCE_PER_RULE} more (review.py --id {unit.id} --full)")
            view.findings.append({"status": o.status, "code": code, "detail": o.detail, "evidence": shown})
    full = view.needs_judgment or not short
    if not full:
        view.admissible = ""  # nothing to judge: the verdict the rules imply is the one to confirm
    view.answer, view.answer_chars = packet.answer or "", ANSWER_CHARS if full else SHORT_ANSWER_CHARS
    if full and packet.trace.curated:
        view.trace = compact_trace(packet.trace.curated, packet.answer)
    follow = packet.followup
    if follow is not None:
        view.followup = {"question": follow.query, "answer": follow.answer or ""}
        if full and follow.trace.curated:
            view.followup["trace"] = compact_trace(follow.trace.curated, follow.answer)
    return view
