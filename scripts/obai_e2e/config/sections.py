"""The sections of target.yaml as typed records, one per section, with its defaults.

``target.py`` reads the file into these (and into ``UiConfig`` and ``Canary``, in ui.py and
adversarial.py) and gathers them in ``TargetConfig``; the stages read them from there: the
driver the target command, async jobs and sandbox, the trace stage the backend,
correlation and vocabulary, the rubric the vocabulary and option labels, the reports the
privacy and report settings.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..base.patterns import NEVER, Pattern
from .shapes import ErrorShape, SpanPattern, span_pattern

NO_SPAN = SpanPattern("", NEVER)
"""A pattern no span name matches: a part of a turn the target does not have."""


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
    answer_from: str = "stdout"  # "stdout", "trace_output:<JSON pointer>" or "stdout_json:<JSON pointer>"
    version_timeout_s: float = 60.0
    env_passthrough: tuple[str, ...] = ()  # names (or patterns) of secret-looking variables the agent needs

    @property
    def answer_source(self) -> str:
        """Where the answer is read: stdout, trace_output or stdout_json."""
        return self.answer_from.split(":", 1)[0]

    @property
    def answer_pointer(self) -> str | None:
        """The JSON pointer into the trace's output when the answer is read there."""
        return self.answer_from.split(":", 1)[1] if self.answer_source == "trace_output" else None

    @property
    def stdout_pointer(self) -> str | None:
        """The JSON pointer into a JSON document (or JSON line) on stdout when the answer is read there."""
        return self.answer_from.split(":", 1)[1] if self.answer_source == "stdout_json" else None


@dataclass(frozen=True)
class AsyncJobs:
    """How an asynchronous job is recognised and followed up."""

    job_id_pattern: Pattern
    eta_pattern: Pattern
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
    settle_s: float | None  # None: the default of the backend's kind (trace.backend.settle_s)
    flush_timeout_s: int
    agent_key: bool = True  # kind opik: the agent gets OPIK_API_KEY to write its traces
    failed_turn_deadline_s: float = 0.0  # how long to look for the trace of a turn that failed (0: one search)
    clock_skew_s: float = 1.0  # how far the backend's clock may be from the harness's (trace/freshness.py)


@dataclass(frozen=True)
class Correlation:
    """How a turn is tied to its trace.

    ``tag`` / ``metadata``: the value the harness puts in ``env_var``, recorded by the
    target; ``thread``: the trace's thread_id is the ``{session}`` of the command;
    ``none``: the turn's time window and its query.
    """

    env_var: str | None
    match: str
    metadata_key: str | None
    window_slack_s: float

    @property
    def window(self) -> bool:
        """True when a turn's trace is told apart only by its time window and query."""
        return self.match == "none"


@dataclass(frozen=True)
class Vocabulary:
    """The span names and fields that carry each part of a turn.

    Every field that points into a span or a trace is a JSON pointer that starts at the
    span (or trace) as ``traces sample --json`` prints it (config/pointers.py).
    """

    hub_span: str | None
    guardrail_span: str
    guardrail_allowed_field: str
    skill_load_span: str | None               # None: the agent loads no skills
    skill_name_field: str | None              # a pointer into the skill-load span, or "name"
    specialists: tuple[str, ...]
    strategy_specialist: str | None
    strategy_input_field: str | None
    prediction_specialist: str | None
    options_specialist: str | None
    final_response_field: str | None          # pointer into the trace; None: the curated text has no answer
    guardrail_allowed_values: tuple = (True,)
    guardrail_refused_values: tuple = (False,)
    specialist_span: str | None = None
    specialist_type: str | None = None        # a span of this type is a specialist (e.g. tool)
    specialist_text: str | None = None        # pointers into a specialist's span
    specialist_data: str | None = None
    error_shapes: tuple[ErrorShape, ...] = ()
    options_max_loss: str | None = None       # pointers into the options specialist's span (under /output)
    options_breakevens: str | None = None

    @cached_property
    def hub(self) -> SpanPattern | None:
        return span_pattern(self.hub_span) if self.hub_span else None

    @cached_property
    def guardrail(self) -> SpanPattern:
        return span_pattern(self.guardrail_span)

    @cached_property
    def skill_load(self) -> SpanPattern:
        return span_pattern(self.skill_load_span) if self.skill_load_span else NO_SPAN

    @cached_property
    def specialist(self) -> SpanPattern | None:
        return span_pattern(self.specialist_span) if self.specialist_span else None

    def is_hub(self, span_name: str | None) -> bool:
        return self.hub is not None and self.hub.matches(span_name)

    def specialist_name(self, span_name: str | None, span_type: str | None = None) -> str | None:
        """The specialist a span is a call of, or None when it is not a specialist span.

        With ``specialist_span`` and/or ``specialist_type`` a span is a specialist when it
        matches every one given, unless it is the hub, the guardrail or a skill load;
        without either, when its name is one of ``specialists``.
        """
        pattern = self.specialist
        if pattern is None and self.specialist_type is None:
            return span_name if span_name in self.specialists else None
        if self.specialist_type is not None and span_type != self.specialist_type:
            return None
        if span_name is None or self.is_hub(span_name) or self.guardrail.matches(span_name) \
                or self.skill_load.matches(span_name):
            return None
        if pattern is None:
            return span_name
        hit, name = pattern.match(span_name)
        if not hit:
            return None
        return name if name is not None else span_name

    @property
    def open_names(self) -> bool:
        """True when specialists are found by pattern or type, so names outside ``specialists`` occur."""
        return self.specialist_span is not None or self.specialist_type is not None


@dataclass(frozen=True)
class OptionsLabels:
    """How the options rule finds the maximum loss and the break-evens in a specialist's text."""

    max_loss: Pattern
    breakeven: Pattern
    unlimited: Pattern


@dataclass(frozen=True)
class StrategyLabels:
    """How the strategy contract is found in the strategy specialist's text (regular expressions)."""

    verdict: Pattern
    operators: Pattern
    total_trades: Pattern  # its first group is the number of trades


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
    disk_budget_mb: int = 1024  # what a turn may write: its sandbox in all, any single file, each private tmpfs


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
