"""The mechanical rubric for one unit: infrastructure first, then the three layers.

Every rule's outcome is recorded; the verdict stops at the first hard failure (in layer
order), otherwise collects the soft codes, otherwise passes. What only a judge can decide
comes back as questions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import answer, routing, specialist
from .context import Context
from .outcome import FAIL, NEEDS_JUDGMENT, NEEDS_REVIEW, Outcome

PASS_V, FAIL_V, REVIEW_V, INCONCLUSIVE_V = "pass", "fail", "needs_review", "inconclusive"


@dataclass
class CheckResult:
    """Rule outcomes, the verdict they imply, and the questions left to a judge."""

    unit_id: str
    case_id: str
    verdict: str
    reasons: list[str]
    outcomes: list[Outcome] = field(default_factory=list)
    questions: list[dict] = field(default_factory=list)
    expected: str = ""
    observed: str = ""
    judgment: str = ""
    infra: dict | None = None

    def to_json(self) -> dict:
        return {"unit_id": self.unit_id, "case_id": self.case_id, "verdict": self.verdict,
                "reasons": self.reasons, "outcomes": [o.to_json() for o in self.outcomes],
                "questions": self.questions, "expected": self.expected, "observed": self.observed,
                "judgment": self.judgment, "infra": self.infra}


def expected_text(case) -> str:
    parts = []
    if case.expect_rejection:
        parts.append("refusal (guardrail fires, no specialist, exit code 1)")
    if case.expected_skills:
        parts.append("skills: " + ", ".join(case.expected_skills))
    if case.expected_skills_absent:
        parts.append("not: " + ", ".join(case.expected_skills_absent))
    if case.expected_tools:
        parts.append("tools: " + ", ".join(case.expected_tools))
    if case.expected_sequence:
        parts.append("sequence: " + " → ".join(case.expected_sequence))
    if case.allowed_extras:
        parts.append("extras allowed: " + ", ".join(case.allowed_extras))
    if case.expect_async_job:
        parts.append("async job with follow-up")
    if case.expect_options_shape:
        parts.append("options shape: " + case.expect_options_shape)
    return "; ".join(parts) or "a grounded, non-empty answer"


def observed_text(packet: dict) -> str:
    trace = packet.get("trace") or {}
    turn = packet.get("turn") or {}
    d = trace.get("digest")
    if not d:
        return f"trace {trace.get('status')}; exit {turn.get('exit_code')}; timed_out {turn.get('timed_out')}"
    g = d.get("guardrail")
    parts = [
        "skills: " + (", ".join(s["skill"] for s in d["skill_loads"]) or "none"),
        "specialists: " + (", ".join(c["name"] for c in d["specialist_calls"]) or "none"),
        "guardrail: " + ("none" if g is None else ("refused" if g["refused"] else "allowed")),
        f"exit {turn.get('exit_code')}",
        f"answer {len(packet.get('answer') or '')} chars",
    ]
    if d["error_spans"]:
        parts.append("error spans: " + ", ".join(e["name"] for e in d["error_spans"]))
    if packet.get("async"):
        parts.append(f"job {packet['async'].get('job_id')}")
    if packet.get("followup_error"):
        parts.append("follow-up: " + packet["followup_error"][:120])
    return "; ".join(parts)


def _infra(packet: dict, case) -> dict | None:
    harness = packet.get("harness") or {}
    if harness.get("error"):
        return {"reason": "harness_error", "message": harness["error"]}
    turn = packet.get("turn") or {}
    trace = packet.get("trace") or {}
    if turn.get("timed_out"):
        return {"reason": "cli_timeout", "message": trace.get("message") or "the target timed out"}
    if trace.get("status") != "resolved":
        return {"reason": trace.get("status") or "harness_error", "message": trace.get("message") or ""}
    if case.expect_async_job:
        failed = (packet.get("async") or {}).get("failed_followup")
        if failed and failed.get("turn", {}).get("timed_out"):
            return {"reason": "cli_timeout", "message": "the follow-up turn timed out"}
        follow = packet.get("followup")
        if follow is not None and (follow.get("trace") or {}).get("status") != "resolved":
            ft = follow.get("trace") or {}
            return {"reason": ft.get("status") or "harness_error",
                    "message": "follow-up: " + (ft.get("message") or "")}
    return None


def context_for(packet: dict, case, config) -> Context:
    follow = packet.get("followup")
    return Context(
        case=case, config=config, packet=packet, digest=packet["trace"]["digest"],
        answer=packet.get("answer") or "", exit_code=(packet.get("turn") or {}).get("exit_code"),
        followup_digest=(follow or {}).get("trace", {}).get("digest") if follow else None,
        followup_answer=follow.get("answer") if follow else None,
    )


def questions_for(outcomes: list[Outcome]) -> list[dict]:
    out = []
    for o in outcomes:
        if o.status == NEEDS_JUDGMENT:
            out.append({"id": o.rule, "question": "Does the final answer address the question's actual ask? "
                        "Answer no (hub.incomplete_answer) if it misses part of what was asked.",
                        "evidence": [e.to_json() for e in o.evidence]})
        if o.rule == "hub.unverified_number" and o.status == NEEDS_REVIEW:
            for code, ev in zip(o.codes, o.evidence):
                out.append({"id": code, "question": f"Confirm: is {code.split(':', 1)[1]} absent from every "
                            "specialist payload (not a restatement or a simple derivation)? Keep the code if so.",
                            "evidence": [ev.to_json()]})
    return out


def check_packet(packet: dict, case, config) -> CheckResult:
    unit_id = packet.get("unit_id") or case.id
    expected = expected_text(case)
    observed = observed_text(packet)
    infra = _infra(packet, case)
    if infra:
        return CheckResult(unit_id, case.id, INCONCLUSIVE_V, [infra["reason"]], expected=expected,
                           observed=observed, judgment=f"{infra['reason']}: {infra['message']}".strip(": "),
                           infra=infra)
    ctx = context_for(packet, case, config)
    outcomes = routing.check(ctx) + specialist.check(ctx) + answer.check(ctx)
    first_fail = next((o for o in outcomes if o.status == FAIL), None)
    soft = [c for o in outcomes if o.status == NEEDS_REVIEW for c in o.tripped_codes]
    if first_fail is not None:
        verdict, reasons = FAIL_V, [first_fail.code]
        judgment = f"{first_fail.code}: {first_fail.detail}."
    elif soft:
        verdict, reasons = REVIEW_V, soft
        details = [o.detail for o in outcomes if o.status == NEEDS_REVIEW]
        judgment = "; ".join(details) + "."
    else:
        verdict, reasons = PASS_V, []
        applied = sum(1 for o in outcomes if o.status not in ("skipped", NEEDS_JUDGMENT))
        judgment = f"All {applied} applicable rules passed."
    return CheckResult(unit_id, case.id, verdict, reasons, outcomes, questions_for(outcomes),
                       expected, observed, judgment)
