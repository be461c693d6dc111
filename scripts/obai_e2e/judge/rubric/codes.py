"""The rubric's vocabulary: every code a verdict may carry, and how serious it is."""
from __future__ import annotations

import re

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
)
INFRA_REASONS = (
    "trace_not_found",
    "opik_unreachable",
    "multi_match",
    "cli_timeout",
    "trace_incomplete",
    "harness_error",
)

_NAME = r"[A-Za-z0-9_.:-]+"
_HARD = [
    r"routing\.skill_missing", r"routing\.skill_overload", r"routing\.specialist_missing",
    r"routing\.sequence_violation", r"routing\.hub_paraphrase", rf"trace\.error_span:{_NAME}",
    r"guardrail\.leaky", r"specialist\.(?!strategy\.|prediction\.|options\.)[A-Za-z0-9_-]+\.(empty|tool_error)",
    r"specialist\.strategy\.(contract_broken|zero_trades|async_stub_broken|async_followup_missing)",
    r"specialist\.prediction\.no_slug", r"specialist\.options\.math", r"hub\.empty_response",
    r"guardrail\.exit_code", r"guardrail\.leaky_response",
]
_SOFT = [r"routing\.unexpected_specialist", r"hub\.unverified_number:[^\s|]+", r"hub\.incomplete_answer"]

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
