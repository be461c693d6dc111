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
)
SOFT_CODES = (
    "routing.unexpected_specialist",
    "hub.unverified_number:<value>",
    "hub.incomplete_answer",
    "hub.answer_truncated",
)
INFRA_REASONS = (
    "trace_not_found",
    "opik_unreachable",
    "multi_match",
    "cli_timeout",
    "trace_incomplete",
    "harness_error",
    "target_crashed",
)

_NAME = r"[A-Za-z0-9_.:%-]+"
_SPECIALIST = r"[A-Za-z0-9_%-]+"
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
    """A specialist's name inside ``specialist.<name>.<what>``: dots are encoded too."""
    return code_name(raw, keep="_-")
_HARD = [
    r"routing\.skill_missing", r"routing\.skill_overload", r"routing\.specialist_missing",
    r"routing\.sequence_violation", r"routing\.hub_paraphrase", rf"trace\.error_span:{_NAME}",
    r"guardrail\.leaky", rf"specialist\.(?!strategy\.|prediction\.|options\.){_SPECIALIST}\.(empty|tool_error)",
    r"specialist\.strategy\.(contract_broken|zero_trades|async_stub_broken|async_followup_missing)",
    r"specialist\.prediction\.no_slug", r"specialist\.options\.math", r"hub\.empty_response",
    r"guardrail\.exit_code", r"guardrail\.leaky_response",
]
_SOFT = [r"routing\.unexpected_specialist", r"hub\.unverified_number:[^\s|]+", r"hub\.incomplete_answer",
         r"hub\.answer_truncated"]

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
