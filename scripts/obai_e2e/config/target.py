"""The target configuration (``cases/target.yaml``): how to drive and read the agent."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import schema
from ..base.errors import ConfigError
from ..base.paths import bundle_root, cases_file
from ..base.yamlio import load_yaml

DEFAULT_REDACT = ["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"]


def default_target_path() -> Path:
    return cases_file("target.yaml", "OBAI_E2E_TARGET")


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


def _regex(value: str, source: str, where: str) -> re.Pattern:
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"{source}: field {where}: {value!r} is not a valid regular expression ({exc})") from None


def load_target_config(path: Path | None = None) -> TargetConfig:
    path = Path(path) if path else default_target_path()
    source = str(path)
    data, lines = load_yaml(path, label=source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    schema.check(data, "target.schema.json", source=source, lines=lines)
    root = bundle_root()

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
    )
    if not any("{query}" in part for part in target.command):
        raise ConfigError(f"{source}: field /target/command: must contain the placeholder {{query}}")

    a = data.get("async_jobs", {})
    async_jobs = AsyncJobs(
        job_id_pattern=_regex(a.get("job_id_pattern", r"Job ID:\s*([A-Za-z0-9_-]+)"), source, "/async_jobs/job_id_pattern"),
        eta_pattern=_regex(a.get("eta_pattern", r"ETA:\s*(\d+(?:\.\d+)?)\s*s"), source, "/async_jobs/eta_pattern"),
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
    )

    c = data["correlation"]
    if c["match"] == "metadata" and not c.get("metadata_key"):
        raise ConfigError(f"{source}: field /correlation/metadata_key: required when match is 'metadata'")
    correlation = Correlation(
        env_var=c["env_var"],
        match=c["match"],
        metadata_key=c.get("metadata_key"),
        window_slack_s=float(c.get("window_slack_s", 2)),
    )

    v = data["vocabulary"]
    vocabulary = Vocabulary(
        hub_span=v["hub_span"],
        guardrail_span=v["guardrail_span"],
        guardrail_allowed_field=v.get("guardrail_allowed_field", "output.allowed"),
        skill_load_span=v["skill_load_span"],
        skill_name_field=v["skill_name_field"],
        specialists=tuple(v["specialists"]),
        strategy_specialist=v.get("strategy_specialist"),
        strategy_input_field=v.get("strategy_input_field"),
        prediction_specialist=v.get("prediction_specialist"),
        options_specialist=v.get("options_specialist"),
        final_response_field=v["final_response_field"],
    )
    for key in ("strategy_specialist", "prediction_specialist", "options_specialist"):
        name = getattr(vocabulary, key)
        if name is not None and name not in vocabulary.specialists:
            raise ConfigError(f"{source}: field /vocabulary/{key}: {name!r} is not in /vocabulary/specialists")

    r = data.get("rubric", {})
    refusal = tuple(_regex(p, source, "/rubric/refusal_patterns") for p in r.get("refusal_patterns", []))
    leak = tuple(_regex(p, source, "/rubric/leak_patterns") for p in r.get("leak_patterns", [r"\d"]))

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
        raise ConfigError(f"{source}: field /report/trace_url_template: must contain the placeholder {{trace_id}}")
    if template is not None and not template.startswith(("http://", "https://")):
        raise ConfigError(f"{source}: field /report/trace_url_template: must start with http:// or https://")
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
    )
