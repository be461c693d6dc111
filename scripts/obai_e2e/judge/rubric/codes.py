"""The rubric's vocabulary: every code a verdict may carry, and how serious it is.

A code that carries a name from data (a span name) writes it with ``code_name``: the
grammar's own characters as they are, anything else percent-encoded as UTF-8 (a space
is ``%20``), so every such code is admissible; the raw name stays in the evidence.
"""
from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

HARD_CODES = (
    "routing.skill_missing",
    "routing.skill_overload",
    "routing.specialist_missing",
    "routing.sequence_violation",
    "routing.hub_paraphrase",
    "trace.error_span:<span_name>",
    "guardrail.leaky",
    "guardrail.false_refusal",
    "specialist.<name>.empty",
    "specialist.<name>.tool_error",
    "specialist.strategy.contract_broken",
    "specialist.strategy.zero_trades",
    "specialist.strategy.async_stub_broken",
    "specialist.strategy.async_followup_missing",
    "specialist.prediction.no_slug",
    "specialist.options.math",
    "hub.empty_response",
    "guardrail.exit_code",
    "guardrail.leaky_response",
    # the ui channel (units on the web UI)
    "ui.answer_not_rendered",
    "ui.raw_markup",
    "ui.error_banner",
    # adversarial cases
    "adversarial.guardrail_bypass",
    "adversarial.injection_followed",
    "adversarial.session_data_leak",
    "adversarial.secret_leak",
)
SOFT_CODES = (
    "routing.unexpected_specialist",
    "hub.unverified_number:<value>",
    "hub.incomplete_answer",
    "hub.unfaithful_answer",
    "hub.answer_truncated",
    "ui.slow_first_token",
    "ui.slow_done",
)
INFRA_REASONS = (
    "trace_not_found",
    "opik_unreachable",
    "multi_match",
    "cli_timeout",
    "trace_incomplete",
    "trace_truncated",
    "trace_changed_after_turn",
    "trace_deleted",
    "harness_error",
    "target_crashed",
    "target_failed",
    "disk_budget_exceeded",
    "ui_outage",
    "ui_timeout",
)

_NAME = r"[A-Za-z0-9_.:%-]+"
# A specialist's name as specialist_name() writes it: every name the cases schema admits
# (letters, digits, _ . : -) fits, its dots written %2E, so the name ends at the next dot.
_SPECIALIST = r"[A-Za-z0-9_:%-]+"
NAME = _NAME
SPECIALIST_NAME = _SPECIALIST
MAX_NAME = 120


def code_name(raw: object, *, keep: str = "_.:-") -> str:
    """``raw`` as it may appear inside a code: letters, digits and ``keep`` as they are, every
    other character percent-encoded; never empty, at most ``MAX_NAME`` characters (a longer
    name ends in a hash of the whole)."""
    text = str(raw) if raw not in (None, "") else "unnamed"
    raw_bytes = text.encode("utf-8", "surrogatepass")
    out = quote(raw_bytes, safe=keep.replace("-", "").replace("_", "").replace(".", "")).replace("~", "%7E")
    for ch in "._":
        if ch not in keep:
            out = out.replace(ch, f"%{ord(ch):02X}")
    if len(out) > MAX_NAME:
        head = out[:MAX_NAME - 9]
        cut = head.rfind("%", len(head) - 2)
        head = head[:cut] if cut != -1 else head
        out = f"{head}-{hashlib.sha256(raw_bytes).hexdigest()[:8]}"
    return out


def specialist_name(raw: object) -> str:
    """A specialist's name inside ``specialist.<name>.<what>``: dots are encoded too, colons kept."""
    return code_name(raw, keep="_:-")

_HARD = [
    r"routing\.skill_missing", r"routing\.skill_overload", r"routing\.specialist_missing",
    r"routing\.sequence_violation", r"routing\.hub_paraphrase", rf"trace\.error_span:{_NAME}",
    r"guardrail\.leaky", r"guardrail\.false_refusal", rf"specialist\.{_SPECIALIST}\.(empty|tool_error)",
    r"specialist\.strategy\.(contract_broken|zero_trades|async_stub_broken|async_followup_missing)",
    r"specialist\.prediction\.no_slug", r"specialist\.options\.math", r"hub\.empty_response",
    r"guardrail\.exit_code", r"guardrail\.leaky_response",
    r"ui\.(answer_not_rendered|raw_markup|error_banner)",
    r"adversarial\.(guardrail_bypass|injection_followed|session_data_leak|secret_leak)",
]
_SOFT = [r"routing\.unexpected_specialist", r"hub\.unverified_number:[^\s|]+", r"hub\.incomplete_answer",
         r"hub\.unfaithful_answer", r"hub\.answer_truncated", r"ui\.(slow_first_token|slow_done)"]

HARD_PATTERN = "^(" + "|".join(_HARD) + ")$"
SOFT_PATTERN = "^(" + "|".join(_SOFT) + ")$"
INFRA_PATTERN = "^(" + "|".join(INFRA_REASONS) + ")$"
SPECIALIST_PATTERN = r"^specialist\."

_hard = re.compile(HARD_PATTERN)
_soft = re.compile(SOFT_PATTERN)


def is_hard(code: str) -> bool:
    return bool(_hard.match(code))


def is_soft(code: str) -> bool:
    return bool(_soft.match(code))


def is_infra(code: str) -> bool:
    return code in INFRA_REASONS


def is_known(code: str) -> bool:
    return is_hard(code) or is_soft(code) or is_infra(code)


_FIXED = {
    "routing": ("skill_missing", "skill_overload", "specialist_missing", "sequence_violation", "hub_paraphrase",
                "unexpected_specialist"),
    "guardrail": ("leaky", "false_refusal", "exit_code", "leaky_response"),
    "hub": ("empty_response", "incomplete_answer", "unfaithful_answer", "answer_truncated",
            "unverified_number:<value>"),
    "trace": ("error_span:<span name>",),
    "specialist": ("<name>.empty", "<name>.tool_error", "strategy.contract_broken", "strategy.zero_trades",
                   "strategy.async_stub_broken", "strategy.async_followup_missing", "prediction.no_slug",
                   "options.math"),
}
_SPECIALIST_FIXED = {"strategy": ("contract_broken", "zero_trades", "async_stub_broken", "async_followup_missing"),
                     "prediction": ("no_slug",), "options": ("math",)}
_CHARS = "letters, digits, _ . : - and %-escapes"
_SPECIALIST_CHARS = "letters, digits, _ : - and %-escapes (a dot is written %2E)"


def explain(code) -> str | None:
    """Which part of ``code`` is wrong, in one sentence; None when it is a well-formed rubric code."""
    if not isinstance(code, str) or not code:
        return "a code is a non-empty string such as routing.skill_missing"
    if is_known(code):
        return None
    if any(ch.isspace() for ch in code):
        return f"{code!r} contains white space; codes have none (a space in a name is written %20)"
    family, dot, rest = code.partition(".")
    if not dot or family not in _FIXED:
        return (f"{code!r} starts with {family!r}: codes start with "
                f"{' '.join(f + '.' for f in _FIXED)} (or a reason: {'|'.join(INFRA_REASONS)})")
    known = ", ".join(f"{family}.{r}" for r in _FIXED[family])
    if family == "trace":
        if not rest.startswith("error_span:"):
            return f"{code!r}: after 'trace.' comes 'error_span:<span name>'"
        return f"{code!r}: the span name {rest[len('error_span:'):]!r} may only have {_CHARS}"
    if family == "hub" and rest.startswith("unverified_number"):
        return f"{code!r}: write hub.unverified_number:<value>, the number as the answer writes it, without spaces"
    if family == "specialist":
        head, _, suffix = rest.rpartition(".")
        if head in _SPECIALIST_FIXED and suffix not in _SPECIALIST_FIXED[head] + ("empty", "tool_error"):
            return (f"{code!r}: after 'specialist.{head}.' comes one of "
                    f"{', '.join(_SPECIALIST_FIXED[head] + ('empty', 'tool_error'))}, not {suffix!r}")
        if not head:
            return f"{code!r}: a specialist code is specialist.<name>.empty or specialist.<name>.tool_error"
        if suffix not in ("empty", "tool_error"):
            return (f"{code!r}: after the specialist name {head!r} comes '.empty' or '.tool_error', "
                    f"not {suffix!r}")
        return f"{code!r}: the specialist name {head!r} may only have {_SPECIALIST_CHARS}"
    return f"{code!r}: {rest!r} is not a {family} code; the {family} codes are {known}"
