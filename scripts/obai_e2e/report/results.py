"""Finishing a run: results.json, the runs/latest link and the summary line."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import schema
from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import ConfigError, UsageError
from ..base.fsutil import dumps_json, write_once
from ..base.paths import runs_root
from ..base.pii import withhold_quotes
from ..base.record import Record
from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet import load_packet
from ..judge.panel.aggregate import panel_for_unit
from ..judge.rubric import check_packet
from ..rundir.meta import RunMeta, baseline_of, load_run
from .diff import build_diff, markdown_lines, write_diff
from .diff import summary as diff_summary
from .diff import summary_line as diff_summary_line
from .record import load_verdict
from .report_md import insert_changes

RESULTS_SCHEMA_VERSION = 1
FULL_CHECK_UNITS = 2000
RESULTS_SCHEMAS = {1: "results.v1.schema.json"}
VERDICTS = ("pass", "fail", "needs_review", "inconclusive")
# Fields a recorded verdict carries over into its unit's entry (when set).
VERDICT_FIELDS = ("verdict", "reasons", "judgment", "expected", "observed", "judged_by", "override",
                  "repair", "answers", "mechanical", "judge_panel")


@dataclass
class Latency(Record):
    """A unit's timings: the first turn, the async wait, the follow-up turn, the harness's own overhead."""

    turn_ms: int | None = None
    wait_s: float | None = None
    followup_ms: int | None = None
    overhead_ms: int | None = None


@dataclass
class UnitResult(Record):
    """One unit's entry in results.json: the case, the verdict with every rule outcome, and the evidence."""

    unit_id: str
    case_id: str
    repeat: int = 1
    feature: str = ""
    query: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    provenance: str = "synthetic"
    mode: str = "A"
    stochastic: bool = False
    verdict: str = "not_judged"
    reasons: list[str] = field(default_factory=list)
    judgment: str = ""
    expected: str = ""
    observed: str = ""
    judged_by: str = ""
    override: dict[str, Any] | None = None
    repair: dict[str, Any] | None = None
    answers: dict[str, Any] = field(default_factory=dict)
    mechanical: dict[str, Any] | None = None
    rule_outcomes: list[dict[str, Any]] = field(default_factory=list)
    trace_ids: list[str] = field(default_factory=list)
    trace_status: str | None = None
    latency: Latency = field(default_factory=Latency)
    exit_code: int | None = None
    timed_out: bool = False
    answer: str = ""
    curated_trace: str | None = None
    followup_curated_trace: str | None = None
    judge_panel: dict[str, Any] | None = None
    trace_urls: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = None
    cost: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _add_usage(a: dict | None, b: dict | None) -> dict | None:
    if not a or not b:
        return a or b
    return {k: a.get(k, 0) + b.get(k, 0) for k in sorted(set(a) | set(b))}


def unit_result(config: TargetConfig, run_dir: Path, unit: Unit, meta: RunMeta) -> UnitResult:
    """The results.json entry of ``unit``, from its packet and its recorded verdict."""
    case = unit.case
    entry = UnitResult(unit_id=unit.id, case_id=case.id, repeat=unit.repeat, feature=case.feature,
                       query=case.query, labels=dict(case.labels), provenance=case.provenance, mode=meta.mode,
                       stochastic=case.stochastic)
    packet = load_packet(run_dir, unit.id)
    if packet is not None:
        if packet.query and packet.query != case.query:
            entry.query = packet.query  # pseudonymised korpus text
        follow = packet.followup
        entry.trace_ids = packet.trace_ids()
        entry.trace_status = packet.trace.status
        entry.latency = Latency(turn_ms=packet.turn.wall_ms,
                                wait_s=packet.async_job.wait_s if packet.async_job else None,
                                followup_ms=follow.turn.wall_ms if follow else None,
                                overhead_ms=packet.harness.overhead_ms)
        entry.exit_code = packet.turn.exit_code
        entry.timed_out = packet.turn.timed_out
        entry.answer = packet.answer
        entry.curated_trace = packet.trace.curated
        entry.followup_curated_trace = follow.trace.curated if follow else None
        entry.trace_urls = [u for u in (packet.trace.url, follow.trace.url if follow else None) if u]
        digests = [d for d in (packet.trace.digest, follow.trace.digest if follow else None) if d is not None]
        for d in digests:
            entry.usage = _add_usage(entry.usage, d.usage)
        costs = [d.cost for d in digests if d.cost is not None]
        entry.cost = round(sum(costs), 8) if costs else None
        check = check_packet(packet, case, config)
        entry.rule_outcomes = [o.to_json() for o in check.outcomes]
        entry.expected, entry.observed = check.expected, check.observed
    verdict = load_verdict(run_dir, unit.id)
    if verdict is not None:
        for key in VERDICT_FIELDS:
            value = getattr(verdict, key)
            if value is not None:
                setattr(entry, key, value)
    if entry.judge_panel is None:
        entry.judge_panel = panel_for_unit(run_dir, unit.id)
    if case.provenance == "korpus" and config.privacy is not None and not config.privacy.quote_allowed:
        entry = UnitResult.from_json(withhold_quotes(entry.to_json()))
    return entry


def build_results(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *,
                  allow_incomplete: bool = False, catalog_version: str | None = None) -> dict:
    run_dir = Path(run_dir)
    meta = load_run(run_dir)
    missing = [u.id for u in units if load_verdict(run_dir, u.id) is None]
    if missing and not allow_incomplete:
        raise UsageError(f"{len(missing)} unit(s) have no verdict yet: {', '.join(missing[:10])}"
                         f"{' …' if len(missing) > 10 else ''}; resume the run first (or finish with --allow-incomplete)")
    entries = [unit_result(config, run_dir, u, meta).to_json() for u in units]
    summary = summarize(entries)
    finished = utc_now()
    run = {k: v for k, v in meta.to_json().items() if k not in ("units", "schema_version")}
    run["finished_at"] = iso(finished)
    run["duration_s"] = round((finished - parse_iso(meta.created_at)).total_seconds(), 3)
    run["catalog_version"] = catalog_version
    disabled = [{"id": cid, "reason": _disabled_reason(case_set, cid)} for cid in meta.disabled_skipped]
    return {"schema_version": RESULTS_SCHEMA_VERSION, "kind": "obai-e2e-results", "run": run,
            "summary": summary, "totals": totals(entries), "units": entries, "disabled": disabled}


def summarize(entries: list[dict]) -> dict:
    """The summary of results.json: units per verdict (not_judged included) and the total."""
    summary = {v: 0 for v in VERDICTS}
    summary["not_judged"] = 0
    for e in entries:
        summary[e["verdict"]] += 1
    summary["total"] = len(entries)
    return summary


def _disabled_reason(case_set: CaseSet, cid: str) -> str:
    try:
        return case_set.by_id(cid).disabled_reason
    except Exception:  # noqa: BLE001 - a case removed since the run started
        return ""


def summary_line(summary: dict) -> str:
    return " / ".join(f"{summary[v]} {v}" for v in VERDICTS)


def finalize(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *,
             allow_incomplete: bool = False, catalog_version: str | None = None,
             baseline: Path | None = None) -> dict:
    """Write diff.json and results.json once (an identical rewrite is a no-op), put what changed at
    the top of report.md, and point runs/latest at the run.

    ``baseline`` (a run directory or its results.json) defaults to the one recorded when the
    run was created: the same baseline the loss layer compares with.
    """
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    diff_path = run_dir / "diff.json"
    if path.exists():
        data = load_results(path)
        diff = json.loads(diff_path.read_text(encoding="utf-8")) if diff_path.exists() else None
    else:
        data = build_results(config, case_set, run_dir, units, allow_incomplete=allow_incomplete,
                             catalog_version=catalog_version)
        base_path = baseline or baseline_of(run_dir)
        base = read_baseline(base_path)
        diff = build_diff(data["run"]["run_id"], data["units"], base)
        if diff["baseline"] is not None:
            diff["baseline"]["results"] = str(results_path_of(base_path))
        diff["totals"] = {"run": data["totals"], "baseline": (base or {}).get("totals")}
        data["diff"] = diff_summary(diff)
        schema.check(data, RESULTS_SCHEMAS[RESULTS_SCHEMA_VERSION], source=str(path))
        schema.check(diff, "diff.v1.schema.json", source=str(diff_path))
        write_diff(run_dir, diff)
        write_once(path, dumps_json(data))
    if diff is not None:
        insert_changes(run_dir / "report.md", (diff.get("baseline") or {}).get("run_id"), markdown_lines(diff))
    link_latest(run_dir)
    return {"status": "finished", "run_dir": str(run_dir), "results": str(path),
            "report_md": str(run_dir / "report.md"), "report_html": str(run_dir / "report.html"),
            "summary": data["summary"], "summary_line": summary_line(data["summary"]),
            "diff": str(diff_path) if diff is not None else None,
            "diff_counts": diff["counts"] if diff is not None else None,
            "diff_line": diff_summary_line(diff) if diff is not None else None}


def results_path_of(path: Path) -> Path:
    """A run directory's results.json, or the path itself when it names a file."""
    path = Path(path)
    return path / "results.json" if path.is_dir() else path


def read_baseline(path: Path | None) -> dict | None:
    """The baseline's results (a run directory or its results.json), or None without one."""
    return None if path is None else read_results_json(results_path_of(path))


def totals(entries: list[dict]) -> dict:
    """What the run cost in all: agent time, and tokens and cost where the traces carry them."""
    def total(values):
        values = [v for v in values if v is not None]
        return round(sum(values), 6) if values else None
    return {"units": len(entries),
            "turn_ms": total((e.get("latency") or {}).get("turn_ms") for e in entries),
            "tokens": total((e.get("usage") or {}).get("total_tokens") for e in entries),
            "cost": total(e.get("cost") for e in entries)}


def read_results_json(path: Path) -> dict:
    """Parse a results.json and refuse an unknown schema version, with a clear message."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: results file not found (finish the run first: finalize_run.py)") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in RESULTS_SCHEMAS:
        raise ConfigError(f"{path}: field /schema_version: results schema version {version!r} is not supported "
                          f"(this harness reads {sorted(RESULTS_SCHEMAS)}); re-run or convert that run")
    return data


def load_results(path: Path) -> dict:
    """Read a results.json and check it against the JSON Schema of its version."""
    data = read_results_json(path)
    schema_name = RESULTS_SCHEMAS[data["schema_version"]]
    units = data.get("units")
    if isinstance(units, list) and len(units) > FULL_CHECK_UNITS:
        # Validating every unit costs milliseconds each; a large file was validated when it
        # was written, so here its frame and an evenly spread sample of units are checked.
        step = len(units) // FULL_CHECK_UNITS + 1
        schema.check({**data, "units": units[::step]}, schema_name, source=str(path))
    else:
        schema.check(data, schema_name, source=str(path))
    return data


def link_latest(run_dir: Path) -> None:
    """Point runs/latest at ``run_dir`` atomically (a relative link, so the tree can move)."""
    root = runs_root()
    latest = root / "latest"
    target = os.path.relpath(Path(run_dir).resolve(), root.resolve())
    tmp = root / f".latest.{os.getpid()}"
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, latest)
