"""The target configuration (``cases/target.yaml``): how to drive and read the agent.

The file goes in; a ``TargetConfig`` comes out, with every default filled in and every
field checked (a bad one is a ``ConfigError`` naming the file, the line and the field).
The records of its sections are in sections.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import schema
from ..base.errors import ConfigError
from ..base.paths import cases_file, use_runs_root
from ..base.patterns import NEVER, Pattern
from ..base.yamlio import Lines, line_for, load_yaml_doc
from .adversarial import Canary, parse_canaries
from .fields import Fields
from .sections import (
    AsyncJobs,
    Correlation,
    OptionsLabels,
    Privacy,
    ReportSettings,
    Sandbox,
    StrategyLabels,
    Target,
    TraceBackend,
    Vocabulary,
)
from .ui import UiConfig, parse_ui
from .vocabulary import parse_vocabulary

DEFAULT_REDACT = ["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"]
# The demo's English option labels; a target with other wording sets rubric.options_labels.
DEFAULT_OPTIONS_LABELS = {
    "max_loss": r"(?i)\bmax(?:imum)?\.?\s+loss\b",
    "breakeven": r"(?i)\bbreak-?\s?evens?\b",
    "unlimited": r"(?i)\b(unlimited|unbounded|uncapped|infinite)\b",
}
# The demo's strategy contract; a target with other wording sets rubric.strategy_labels.
DEFAULT_STRATEGY_LABELS = {
    "verdict": r"\bVerdict\b",
    "operators": r"(?im)^\s*operators?\s*:|(?:^|\s)(?:<=|>=|<|>|crosses (?:above|below))\s*\d",
    "total_trades": r"(?im)^\s*total\s+trades\s*[:=]\s*(\d+)",
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
    refusal_patterns: tuple[Pattern, ...]
    leak_patterns: tuple[Pattern, ...]
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
    failure_ack_patterns: tuple[Pattern, ...] = ()
    ui: UiConfig | None = field(default=None)  # None: the target has no ui channel
    canaries: tuple[Canary, ...] = field(default=())
    lines: Lines = field(default_factory=dict, repr=False)
    strategy_labels: StrategyLabels | None = field(default=None)
    runs_dir: Path | None = field(default=None)  # run.runs_dir; None: $OBAI_E2E_RUNS or the bundle's runs/
    missing_files: tuple[dict, ...] = field(default=())  # run.catalog/plan/holdout_cases naming no file (located)

    @property
    def display_name(self) -> str:
        return self.target.display_name or self.target.name

    def where(self, *path) -> str:
        """``file:line`` of a field of this file (the nearest line known), for messages."""
        line = line_for(self.lines, tuple(path)) if self.lines else None
        return f"{self.path}:{line}" if line else str(self.path)


def load_target_config(path: Path | None = None, *, folder: Path | None = None) -> TargetConfig:
    """Read, check and fill in a target configuration; every problem of the file is named in one ConfigError.

    ``folder``: where the file's relative paths start (default: its own folder); a run's copy of the file
    reads them against the folder of the file it was copied from.
    """
    path = Path(path) if path else default_target_path()
    source = str(path)
    doc = load_yaml_doc(path, label=source)
    data, lines = doc.data, doc.lines
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    # Paths in the file are relative to the file's own folder.
    f = Fields(source, lines, folder=Path(folder).resolve() if folder else path.resolve().parent)
    f.problems.extend(schema.problems(data, "target.schema.json", source=source, lines=lines))
    try:
        schema.refuse_yaml11_booleans(data, "target.schema.json", doc.yaml11_bools, source=source, lines=lines)
    except ConfigError as exc:
        f.adopt(exc)
    parts = _read_sections(f, data)
    f.raise_problems()
    # Every later stage finds the runs folder through base.paths; the file's choice holds for this process.
    use_runs_root(parts["runs_dir"])
    return TargetConfig(path=path, raw=data, lines=lines, missing_files=tuple(f.missing), **parts)


def _read_sections(f: Fields, data: dict) -> dict:
    """Each section read into its record. A section the schema already refused may not be readable: its
    problems are named, and the other sections are still read, so one reading names every problem."""
    parts: dict[str, Any] = {}
    steps = [("target", lambda: {"target": _target(f, data["target"])}),
             ("async_jobs", lambda: {"async_jobs": _async_jobs(f, data.get("async_jobs", {}))}),
             ("trace_backend", lambda: {"backend": _backend(data["trace_backend"])}),
             ("correlation", lambda: {"correlation": _correlation(f, data["correlation"], data["target"])}),
             ("vocabulary", lambda: {"vocabulary": parse_vocabulary(f, data["vocabulary"],
                                                                    parts["target"].answer_pointer)}),
             ("rubric", lambda: _rubric(f, data.get("rubric", {}))),
             ("sandbox", lambda: {"sandbox": _sandbox(data.get("sandbox", {}))}),
             ("anti_mock", lambda: _anti_mock(data)),
             ("privacy", lambda: {"privacy": _privacy(data.get("privacy"))}),
             ("report", lambda: {"report": _report(f, data.get("report", {}))}),
             ("run", lambda: _run(f, data.get("run", {}))),
             ("ui", lambda: {"ui": parse_ui(data.get("ui"), f.source, f.regex)}),
             ("adversarial", lambda: {"canaries": parse_canaries(data.get("adversarial"))})]
    refused = bool(f.problems)  # by the schema: a section may lack what its reader expects
    for _name, step in steps:
        try:
            parts.update(step())
        except ConfigError as exc:
            f.adopt(exc)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            if not refused:
                raise
    return parts


def _target(f: Fields, t: dict) -> Target:
    target = Target(
        name=t["name"],
        command=list(t["command"]),
        version_command=list(t["version_command"]) if t.get("version_command") else None,
        workdir=f.path(t.get("workdir", "."), ("target", "workdir")),
        env=dict(t.get("env", {})),
        timeout_s=float(t.get("timeout_s", 180)),
        kill_grace_s=float(t.get("kill_grace_s", 2)),
        refusal_exit_code=int(t.get("refusal_exit_code", 1)),
        stderr_tail_bytes=int(t.get("stderr_tail_bytes", 4000)),
        display_name=t.get("display_name", ""),
        answer_from=t.get("answer_from", "stdout"),
        version_timeout_s=float(t.get("version_timeout_s", 60)),
        env_passthrough=tuple(t.get("env_passthrough", ())),
    )
    if not any("{query}" in part for part in target.command):
        f.report(("target", "command"), "must contain the placeholder {query}")
    f.pointer(target.answer_pointer or target.stdout_pointer, ("target", "answer_from"))
    return target


def _async_jobs(f: Fields, a: dict) -> AsyncJobs:
    return AsyncJobs(
        job_id_pattern=f.regex(a.get("job_id_pattern", r"Job ID:\s*([A-Za-z0-9_-]+)"),
                               ("async_jobs", "job_id_pattern")),
        eta_pattern=f.regex(a.get("eta_pattern", r"ETA:\s*(\d+(?:\.\d+)?)\s*s"), ("async_jobs", "eta_pattern")),
        margin_s=float(a.get("margin_s", 30)),
        cap_s=float(a.get("cap_s", 600)),
        followup_query=a.get("followup_query", "What are the results of job {job_id}?"),
    )


def _backend(b: dict) -> TraceBackend:
    return TraceBackend(
        kind=b["kind"],
        project=b["project"],
        resolve_deadline_s=float(b.get("resolve_deadline_s", 20)),
        poll_initial_s=float(b.get("poll_initial_s", 0.05)),
        poll_max_s=float(b.get("poll_max_s", 1.0)),
        settle_s=None if b.get("settle_s") is None else float(b["settle_s"]),  # None: the kind's default
        flush_timeout_s=int(b.get("flush_timeout_s", 2)),
        agent_key=bool(b.get("agent_key", True)),
        failed_turn_deadline_s=float(b.get("failed_turn_deadline_s", 0)),
        clock_skew_s=float(b.get("clock_skew_s", 1)),
    )


def _correlation(f: Fields, c: dict, t: dict) -> Correlation:
    if c["match"] == "metadata" and not c.get("metadata_key"):
        f.report(("correlation", "match"), "match: metadata needs /correlation/metadata_key, the trace "
                                           "metadata key the target stores the correlation value under")
    if c["match"] in ("tag", "metadata") and not c.get("env_var"):
        f.report(("correlation", "match"), f"match: {c['match']} needs /correlation/env_var, the variable the "
                                           "harness puts each turn's correlation value in")
    if c["match"] == "thread" and not any("{session}" in part for part in t["command"]):
        f.report(("target", "command"), "correlation match: thread ties a turn to the trace whose thread_id is "
                                        "the turn's session: the command must pass {session} to the agent")
    return Correlation(
        env_var=c.get("env_var"),
        match=c["match"],
        metadata_key=c.get("metadata_key"),
        window_slack_s=float(c.get("window_slack_s", 2)),
    )


def _patterns(f: Fields, values: list, path: tuple) -> tuple[Pattern, ...]:
    return tuple(f.regex(p, path + (i,)) for i, p in enumerate(values))


def _rubric(f: Fields, r: dict) -> dict:
    labels = {**DEFAULT_OPTIONS_LABELS, **r.get("options_labels", {})}
    strategy = {**DEFAULT_STRATEGY_LABELS, **r.get("strategy_labels", {})}
    strategy_labels = StrategyLabels(**{k: f.regex(strategy[k], ("rubric", "strategy_labels", k))
                                        for k in DEFAULT_STRATEGY_LABELS})
    if strategy_labels.total_trades.groups < 1 and strategy_labels.total_trades is not NEVER:
        f.report(("rubric", "strategy_labels", "total_trades"), "needs one group: the number of trades")
    return {
        "refusal_patterns": _patterns(f, r.get("refusal_patterns", []), ("rubric", "refusal_patterns")),
        "leak_patterns": _patterns(f, r.get("leak_patterns", [r"\d"]), ("rubric", "leak_patterns")),
        "options_labels": OptionsLabels(**{k: f.regex(labels[k], ("rubric", "options_labels", k))
                                           for k in DEFAULT_OPTIONS_LABELS}),
        "failure_ack_patterns": _patterns(f, r.get("failure_ack_patterns", DEFAULT_FAILURE_ACK),
                                          ("rubric", "failure_ack_patterns")),
        "strategy_labels": strategy_labels,
    }


def _sandbox(s: dict) -> Sandbox:
    return Sandbox(
        enabled=bool(s.get("enabled", True)),
        fresh_home=bool(s.get("fresh_home", True)),
        fresh_workdir=bool(s.get("fresh_workdir", False)),
        keys=dict(s.get("keys", {})),
        snapshot=list(s.get("snapshot", [])),
        restore=list(s.get("restore", [])),
        hook_timeout_s=float(s.get("hook_timeout_s", 60)),
        disk_budget_mb=int(s.get("disk_budget_mb", 1024)),
    )


def _anti_mock(data: dict) -> dict:
    m = data.get("anti_mock", {})
    return {"anti_mock_env": {k: list(vals) for k, vals in m.get("env", {}).items()},
            "anti_mock_version_markers": tuple(m.get("version_markers", [])),
            "redact_patterns": tuple(data.get("redact", {}).get("env_name_patterns", DEFAULT_REDACT))}


def _privacy(pv: dict | None) -> Privacy | None:
    if pv is None:
        return None
    return Privacy(names=tuple(pv.get("names", [])), retention_days=int(pv["retention_days"]),
                   quote_allowed=bool(pv["quote_allowed"]))


def _report(f: Fields, rep: dict) -> ReportSettings:
    template = rep.get("trace_url_template")
    if template is not None and "{trace_id}" not in template:
        f.report(("report", "trace_url_template"), "must contain the placeholder {trace_id}")
    if template is not None and not template.startswith(("http://", "https://")):
        f.report(("report", "trace_url_template"), "must start with http:// or https://")
    return ReportSettings(trace_url_template=template, feedback_scores=bool(rep.get("feedback_scores", False)))


def _run(f: Fields, run: dict) -> dict:
    return {"mode": run.get("mode", "A"),
            "catalog": f.existing_file(run.get("catalog"), ("run", "catalog"), "loss catalog"),
            "holdout_cases": f.existing_file(run.get("holdout_cases"), ("run", "holdout_cases"), "holdout cases file"),
            "plan": f.existing_file(run.get("plan"), ("run", "plan"), "loss plan"),
            "runs_dir": f.path(run.get("runs_dir"), ("run", "runs_dir"))}
