"""The target configuration (``cases/target.yaml``): how to drive and read the agent.

The file goes in; a ``TargetConfig`` comes out, with every default filled in and every
field checked (a bad one is a ``ConfigError`` naming the file, the line and the field).
The records of its sections are in sections.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import jsonptr, schema
from ..base.errors import ConfigError
from ..base.paths import bundle_root, cases_file
from ..base.yamlio import Lines, line_for, load_yaml
from .adversarial import Canary, parse_canaries
from .sections import (
    AsyncJobs,
    Correlation,
    OptionsLabels,
    Privacy,
    ReportSettings,
    Sandbox,
    Target,
    TraceBackend,
    Vocabulary,
)
from .shapes import ErrorShape, span_pattern
from .ui import UiConfig, parse_ui

DEFAULT_REDACT = ["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"]
# The demo's English option labels; a target with other wording sets rubric.options_labels.
DEFAULT_OPTIONS_LABELS = {
    "max_loss": r"(?i)\bmax(?:imum)?\.?\s+loss\b",
    "breakeven": r"(?i)\bbreak-?\s?evens?\b",
    "unlimited": r"(?i)\b(unlimited|unbounded|uncapped|infinite)\b",
}
DEFAULT_FAILURE_ACK = [r"(?i)\b(unavailable|not available|could not|couldn't|cannot|can't|failed|failure|error|"
                       r"unable|timed out|try again)\b"]


def default_target_path() -> Path:
    return cases_file("target.yaml", "OBAI_E2E_TARGET")


@dataclass(frozen=True)
class TargetConfig:
    """Everything target.yaml says, with defaults filled in."""

    path: Path
    raw: dict[str, Any]
    target: Target
    async_jobs: AsyncJobs
    backend: TraceBackend
    correlation: Correlation
    vocabulary: Vocabulary
    refusal_patterns: tuple[re.Pattern, ...]
    leak_patterns: tuple[re.Pattern, ...]
    sandbox: Sandbox
    anti_mock_env: dict[str, list[str]]
    anti_mock_version_markers: tuple[str, ...]
    redact_patterns: tuple[str, ...]
    mode: str
    catalog: Path | None
    holdout_cases: Path | None = field(default=None)
    plan: Path | None = field(default=None)
    privacy: Privacy | None = field(default=None)  # None: no privacy section (a blocker for korpus cases)
    report: ReportSettings = field(default_factory=ReportSettings)
    options_labels: OptionsLabels | None = field(default=None)
    failure_ack_patterns: tuple[re.Pattern, ...] = ()
    ui: UiConfig | None = field(default=None)  # None: the target has no ui channel
    canaries: tuple[Canary, ...] = field(default=())
    lines: Lines = field(default_factory=dict, repr=False)

    @property
    def display_name(self) -> str:
        return self.target.display_name or self.target.name

    def where(self, *path) -> str:
        """``file:line`` of a field of this file (the nearest line known), for messages."""
        line = line_for(self.lines, tuple(path)) if self.lines else None
        return f"{self.path}:{line}" if line else str(self.path)


class _Fields:
    """Messages about fields of one file, each naming the file, the line and the field."""

    def __init__(self, source: str, lines: Lines):
        self.source, self.lines = source, lines

    def error(self, path: tuple, message: str) -> ConfigError:
        line = line_for(self.lines, path)
        where = f"{self.source}:{line}" if line else self.source
        field_ = "/" + "/".join(str(p) for p in path)
        return ConfigError(f"{where}: field {field_}: {message}")

    def regex(self, value: str, path: tuple) -> re.Pattern:
        try:
            return re.compile(value)
        except re.error as exc:
            raise self.error(path, f"{value!r} is not a valid regular expression ({exc})") from None

    def span(self, value: str | None, path: tuple) -> str | None:
        if value is None:
            return None
        try:
            span_pattern(value)
        except ValueError as exc:
            raise self.error(path, f"not a span name, template or re: pattern: {exc}") from None
        return value

    def pointer(self, value: str | None, path: tuple) -> str | None:
        if value is None:
            return None
        try:
            jsonptr.parse(value)
        except ValueError as exc:
            raise self.error(path, str(exc)) from None
        return value


def _error_shapes(f: _Fields, entries: list, base: tuple) -> tuple[ErrorShape, ...]:
    shapes = []
    for i, e in enumerate(entries):
        where = base + (i,)
        tests = [k for k in ("equals", "matches", "present") if k in e]
        if len(tests) != 1:
            raise f.error(where, "give exactly one of equals, matches or present")
        shapes.append(ErrorShape(
            pointer=f.pointer(e["pointer"], where + ("pointer",)),
            equals=e["equals"] if "equals" in e else jsonptr.MISSING,
            matches=f.regex(e["matches"], where + ("matches",)) if "matches" in e else None,
            present=e.get("present"),
            message=f.pointer(e.get("message"), where + ("message",)),
        ))
    return tuple(shapes)


def load_target_config(path: Path | None = None) -> TargetConfig:
    path = Path(path) if path else default_target_path()
    source = str(path)
    data, lines = load_yaml(path, label=source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    schema.check(data, "target.schema.json", source=source, lines=lines)
    root = bundle_root()
    f = _Fields(source, lines)

    t = data["target"]
    workdir = Path(t.get("workdir", "."))
    target = Target(
        name=t["name"],
        command=list(t["command"]),
        version_command=list(t["version_command"]) if t.get("version_command") else None,
        workdir=workdir if workdir.is_absolute() else (Path.cwd() / workdir).resolve(),
        env=dict(t.get("env", {})),
        timeout_s=float(t.get("timeout_s", 180)),
        kill_grace_s=float(t.get("kill_grace_s", 2)),
        refusal_exit_code=int(t.get("refusal_exit_code", 1)),
        stderr_tail_bytes=int(t.get("stderr_tail_bytes", 4000)),
        display_name=t.get("display_name", ""),
        answer_from=t.get("answer_from", "stdout"),
    )
    if not any("{query}" in part for part in target.command):
        raise f.error(("target", "command"), "must contain the placeholder {query}")
    if target.answer_pointer is not None:
        f.pointer(target.answer_pointer, ("target", "answer_from"))

    a = data.get("async_jobs", {})
    async_jobs = AsyncJobs(
        job_id_pattern=f.regex(a.get("job_id_pattern", r"Job ID:\s*([A-Za-z0-9_-]+)"),
                               ("async_jobs", "job_id_pattern")),
        eta_pattern=f.regex(a.get("eta_pattern", r"ETA:\s*(\d+(?:\.\d+)?)\s*s"), ("async_jobs", "eta_pattern")),
        margin_s=float(a.get("margin_s", 30)),
        cap_s=float(a.get("cap_s", 600)),
        followup_query=a.get("followup_query", "What are the results of job {job_id}?"),
    )

    b = data["trace_backend"]
    backend = TraceBackend(
        kind=b["kind"],
        project=b["project"],
        resolve_deadline_s=float(b.get("resolve_deadline_s", 20)),
        poll_initial_s=float(b.get("poll_initial_s", 0.05)),
        poll_max_s=float(b.get("poll_max_s", 1.0)),
        settle_s=float(b.get("settle_s", 0.3)),
        flush_timeout_s=int(b.get("flush_timeout_s", 2)),
        failed_turn_deadline_s=float(b.get("failed_turn_deadline_s", 0)),
    )

    c = data["correlation"]
    if c["match"] == "metadata" and not c.get("metadata_key"):
        raise f.error(("correlation", "match"), "match: metadata needs /correlation/metadata_key, the trace "
                                                 "metadata key the target stores the correlation value under")
    correlation = Correlation(
        env_var=c["env_var"],
        match=c["match"],
        metadata_key=c.get("metadata_key"),
        window_slack_s=float(c.get("window_slack_s", 2)),
    )

    v = data["vocabulary"]
    out = v.get("specialist_output", {})
    opts = v.get("options_payload", {})
    vocabulary = Vocabulary(
        hub_span=f.span(v["hub_span"], ("vocabulary", "hub_span")),
        guardrail_span=f.span(v["guardrail_span"], ("vocabulary", "guardrail_span")),
        guardrail_allowed_field=v.get("guardrail_allowed_field", "output.allowed"),
        skill_load_span=f.span(v["skill_load_span"], ("vocabulary", "skill_load_span")),
        skill_name_field=v["skill_name_field"],
        specialists=tuple(v["specialists"]),
        strategy_specialist=v.get("strategy_specialist"),
        strategy_input_field=v.get("strategy_input_field"),
        prediction_specialist=v.get("prediction_specialist"),
        options_specialist=v.get("options_specialist"),
        final_response_field=v["final_response_field"],
        guardrail_allowed_values=tuple(v.get("guardrail_allowed_values", [True])),
        guardrail_refused_values=tuple(v.get("guardrail_refused_values", [False])),
        specialist_span=f.span(v.get("specialist_span"), ("vocabulary", "specialist_span")),
        specialist_text=f.pointer(out.get("text"), ("vocabulary", "specialist_output", "text")),
        specialist_data=f.pointer(out.get("data"), ("vocabulary", "specialist_output", "data")),
        error_shapes=_error_shapes(f, out.get("errors", []), ("vocabulary", "specialist_output", "errors")),
        options_max_loss=f.pointer(opts.get("max_loss"), ("vocabulary", "options_payload", "max_loss")),
        options_breakevens=f.pointer(opts.get("breakevens"), ("vocabulary", "options_payload", "breakevens")),
    )
    for key in ("strategy_specialist", "prediction_specialist", "options_specialist"):
        name = getattr(vocabulary, key)
        if name is not None and name not in vocabulary.specialists:
            raise f.error(("vocabulary", key), f"{name!r} is not in /vocabulary/specialists")
    both = set(map(repr, vocabulary.guardrail_allowed_values)) & set(map(repr, vocabulary.guardrail_refused_values))
    if both:
        raise f.error(("vocabulary", "guardrail_refused_values"),
                      f"{', '.join(sorted(both))} is listed as both allowed and refused")
    if vocabulary.skill_name_field == "name" and not vocabulary.skill_load.captures:
        raise f.error(("vocabulary", "skill_name_field"), "'name' reads the {name} part of /vocabulary/"
                      f"skill_load_span, but {vocabulary.skill_load_span!r} has none (e.g. skill:{{name}})")
    for i, name in enumerate(vocabulary.specialists):
        if name.startswith("skill:"):
            raise f.error(("vocabulary", "specialists", i), f"{name!r}: a specialist name may not start with "
                          "'skill:' (expected_sequence uses that prefix for skill loads)")

    r = data.get("rubric", {})
    refusal = tuple(f.regex(p, ("rubric", "refusal_patterns", i)) for i, p in enumerate(r.get("refusal_patterns", [])))
    leak = tuple(f.regex(p, ("rubric", "leak_patterns", i)) for i, p in enumerate(r.get("leak_patterns", [r"\d"])))
    labels = {**DEFAULT_OPTIONS_LABELS, **r.get("options_labels", {})}
    options_labels = OptionsLabels(**{k: f.regex(labels[k], ("rubric", "options_labels", k))
                                      for k in DEFAULT_OPTIONS_LABELS})
    ack = tuple(f.regex(p, ("rubric", "failure_ack_patterns", i))
                for i, p in enumerate(r.get("failure_ack_patterns", DEFAULT_FAILURE_ACK)))

    s = data.get("sandbox", {})
    sandbox = Sandbox(
        enabled=bool(s.get("enabled", True)),
        fresh_home=bool(s.get("fresh_home", True)),
        fresh_workdir=bool(s.get("fresh_workdir", False)),
        keys=dict(s.get("keys", {})),
        snapshot=list(s.get("snapshot", [])),
        restore=list(s.get("restore", [])),
        hook_timeout_s=float(s.get("hook_timeout_s", 60)),
    )

    m = data.get("anti_mock", {})
    run = data.get("run", {})
    pv = data.get("privacy")
    privacy = Privacy(names=tuple(pv.get("names", [])), retention_days=int(pv["retention_days"]),
                      quote_allowed=bool(pv["quote_allowed"])) if pv is not None else None
    rep = data.get("report", {})
    template = rep.get("trace_url_template")
    if template is not None and "{trace_id}" not in template:
        raise f.error(("report", "trace_url_template"), "must contain the placeholder {trace_id}")
    if template is not None and not template.startswith(("http://", "https://")):
        raise f.error(("report", "trace_url_template"), "must start with http:// or https://")
    report = ReportSettings(trace_url_template=template, feedback_scores=bool(rep.get("feedback_scores", False)))
    catalog = run.get("catalog")
    holdout = run.get("holdout_cases")
    plan = run.get("plan")
    return TargetConfig(
        path=path,
        raw=data,
        target=target,
        async_jobs=async_jobs,
        backend=backend,
        correlation=correlation,
        vocabulary=vocabulary,
        refusal_patterns=refusal,
        leak_patterns=leak,
        sandbox=sandbox,
        anti_mock_env={k: list(vals) for k, vals in m.get("env", {}).items()},
        anti_mock_version_markers=tuple(m.get("version_markers", [])),
        redact_patterns=tuple(data.get("redact", {}).get("env_name_patterns", DEFAULT_REDACT)),
        mode=run.get("mode", "A"),
        catalog=(root / catalog) if catalog else None,
        holdout_cases=(root / holdout) if holdout else None,
        plan=(Path(plan) if Path(plan).is_absolute() else root / plan) if plan else None,
        privacy=privacy,
        report=report,
        options_labels=options_labels,
        failure_ack_patterns=ack,
        ui=parse_ui(data.get("ui"), source),
        canaries=parse_canaries(data.get("adversarial")),
        lines=lines,
    )
