"""The digest of one trace: the typed record the rubric's rules read.

``curate.py`` writes it from a trace and its spans; a packet stores it as ``trace.digest``
(its JSON form through ``Record``); the judge's rules read its fields and nothing else of
the trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.record import Record


@dataclass
class Guardrail(Record):
    """The guardrail span's decision."""

    span_id: str | None
    offset_ms: int | None
    allowed: bool | None
    refused: bool
    output: str
    decision: Any = None  # the value of the configured decision field, as the span has it


@dataclass
class SkillLoad(Record):
    """One skill-load span."""

    skill: str
    span_id: str | None
    offset_ms: int | None


@dataclass
class SpecialistCall(Record):
    """One specialist (tool) span, with its output read through the tool envelope."""

    name: str
    span_id: str | None
    parent_span_id: str | None
    offset_ms: int | None
    duration_ms: int | None
    input_text: str
    output_text: str
    payload_text: str
    is_error: bool
    error_text: str | None
    empty: bool
    structured: bool
    has_error_info: bool
    span_name: str | None = None         # the span's own name when the specialist's name is read from it
    error_shape: str | None = None       # the declared error shape the output has
    suspect_error: str | None = None     # looks like an error report of a shape the target did not declare


@dataclass
class StrategyInput(Record):
    """What the hub handed the strategy specialist."""

    span_id: str | None
    text: str


@dataclass
class ErrorSpan(Record):
    """A span that carries ``error_info``."""

    span_id: str | None
    name: str | None
    exception_type: str | None
    message: str


@dataclass
class CutValue(Record):
    """A value a rule reads that arrived cut short (``cut.py`` says how), so no rule judges it."""

    role: str             # specialist | guardrail | skill_load | strategy_input | final_response
    name: str | None      # the specialist's name (a specialist), else the span's name
    span_id: str | None   # None: the trace itself
    field: str            # input | output | metadata
    reason: str


@dataclass
class SpanRow(Record):
    """One span of the trace, in start order."""

    id: str | None
    name: str | None
    type: str | None
    parent_span_id: str | None
    offset_ms: int | None
    duration_ms: int | None
    has_error: bool


@dataclass
class TraceDigest(Record):
    """The structured digest of one trace that the rubric's rules read."""

    trace_id: str | None
    name: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    duration_ms: int | None = None
    thread_id: str | None = None
    tags: list[str] = field(default_factory=list)
    trace_error: bool = False
    complete: bool = True
    hub_span_id: str | None = None
    guardrail: Guardrail | None = None
    skill_loads: list[SkillLoad] = field(default_factory=list)
    specialist_calls: list[SpecialistCall] = field(default_factory=list)
    strategy_input: StrategyInput | None = None
    error_spans: list[ErrorSpan] = field(default_factory=list)
    final_response: str | None = None
    spans: list[SpanRow] = field(default_factory=list)
    usage: dict[str, int] | None = None  # token counts of the turn, when its trace carries them
    cost: float | None = None  # estimated cost of the turn, when its trace carries it
    cut: list[CutValue] = field(default_factory=list)
    # Span ids of skill loads and specialist calls that began at one stamped instant (an SDK that
    # stamps milliseconds starts two spans in one): their start order is no order.
    ties: list[list[str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        for key in ("cut", "ties"):
            if not out[key]:
                out.pop(key)  # written only when there is one
        return out

    def tied(self, a: str | None, b: str | None) -> bool:
        """True when spans ``a`` and ``b`` began at the same stamped instant."""
        return a is not None and b is not None and any(a in group and b in group for group in self.ties)

    def cut_of(self, role: str, name: str | None = None) -> list[CutValue]:
        """The cut values of one role (and, for a specialist, of that specialist)."""
        return [c for c in self.cut if c.role == role and (name is None or c.name == name)]

    def calls_of(self, name: str | None) -> list[SpecialistCall]:
        return [c for c in self.specialist_calls if c.name == name] if name else []
