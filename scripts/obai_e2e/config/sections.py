"""The sections of target.yaml as typed records, one per section, with its defaults.

``target.py`` reads the file into these (and into ``UiConfig`` and ``Canary``, in ui.py and
adversarial.py) and gathers them in ``TargetConfig``; the stages read them from there: the
driver the target command, async jobs and sandbox, the trace stage the backend,
correlation and vocabulary, the rubric the vocabulary and option labels, the reports the
privacy and report settings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .shapes import ErrorShape, SpanPattern, span_pattern


@dataclass(frozen=True)
class Target:
    """One turn of the agent under test."""

    name: str
    command: list[str]
    version_command: list[str] | None
    workdir: Path
    env: dict[str, str]
    timeout_s: float
    kill_grace_s: float
    refusal_exit_code: int
    stderr_tail_bytes: int
    display_name: str = ""
    answer_from: str = "stdout"  # "stdout" or "trace_output:<JSON pointer>"

    @property
    def answer_pointer(self) -> str | None:
        """The JSON pointer into the trace's output when the answer is read there."""
        return self.answer_from.split(":", 1)[1] if self.answer_from.startswith("trace_output:") else None


@dataclass(frozen=True)
class AsyncJobs:
    """How an asynchronous job is recognised and followed up."""

    job_id_pattern: re.Pattern
    eta_pattern: re.Pattern
    margin_s: float
    cap_s: float
    followup_query: str


@dataclass(frozen=True)
class TraceBackend:
    """Where traces are read from."""

    kind: str
    project: str
    resolve_deadline_s: float
    poll_initial_s: float
    poll_max_s: float
    settle_s: float
    flush_timeout_s: int
    failed_turn_deadline_s: float = 0.0  # how long to look for the trace of a turn that failed (0: one search)


@dataclass(frozen=True)
class Correlation:
    """How a turn is tied to its trace."""

    env_var: str
    match: str
    metadata_key: str | None
    window_slack_s: float


@dataclass(frozen=True)
class Vocabulary:
    """The span names and fields that carry each part of a turn."""

    hub_span: str
    guardrail_span: str
    guardrail_allowed_field: str
    skill_load_span: str
    skill_name_field: str
    specialists: tuple[str, ...]
    strategy_specialist: str | None
    strategy_input_field: str | None
    prediction_specialist: str | None
    options_specialist: str | None
    final_response_field: str
    guardrail_allowed_values: tuple = (True,)
    guardrail_refused_values: tuple = (False,)
    specialist_span: str | None = None
    specialist_text: str | None = None        # JSON pointer into a specialist's output
    specialist_data: str | None = None        # JSON pointer to its structured part
    error_shapes: tuple[ErrorShape, ...] = ()
    options_max_loss: str | None = None       # JSON pointers into the options specialist's output
    options_breakevens: str | None = None

    @cached_property
    def hub(self) -> SpanPattern:
        return span_pattern(self.hub_span)

    @cached_property
    def guardrail(self) -> SpanPattern:
        return span_pattern(self.guardrail_span)

    @cached_property
    def skill_load(self) -> SpanPattern:
        return span_pattern(self.skill_load_span)

    @cached_property
    def specialist(self) -> SpanPattern | None:
        return span_pattern(self.specialist_span) if self.specialist_span else None

    def specialist_name(self, span_name: str | None) -> str | None:
        """The specialist a span is a call of, or None when it is not a specialist span."""
        pattern = self.specialist
        if pattern is None:
            return span_name if span_name in self.specialists else None
        hit, name = pattern.match(span_name)
        if not hit:
            return None
        return name if name is not None else span_name


@dataclass(frozen=True)
class OptionsLabels:
    """How the options rule finds the maximum loss and the break-evens in a specialist's text."""

    max_loss: re.Pattern
    breakeven: re.Pattern
    unlimited: re.Pattern


@dataclass(frozen=True)
class Sandbox:
    """Per-case isolation of the target (mode A)."""

    enabled: bool
    fresh_home: bool
    fresh_workdir: bool
    keys: dict[str, str]
    snapshot: list[str]
    restore: list[str]
    hook_timeout_s: float


@dataclass(frozen=True)
class Privacy:
    """How korpus (real-world) data is handled: names to pseudonymise, retention, quoting."""

    names: tuple[str, ...]
    retention_days: int
    quote_allowed: bool


@dataclass(frozen=True)
class ReportSettings:
    """What the reports link to and write back."""

    trace_url_template: str | None = None
    feedback_scores: bool = False
