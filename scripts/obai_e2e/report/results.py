"""Finishing a run: results.json, the runs/latest link and the summary line."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..base import schema
from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import ConfigError, UsageError
from ..base.fsutil import dumps_json, write_once
from ..judge.panel.aggregate import panel_for_unit
from ..drive.packet import load_packet
from ..base.paths import runs_root
from .record import load_verdict
from ..judge.rubric import check_packet
from ..rundir.layout import load_run
from ..config.units import resolve_unit

RESULTS_SCHEMA_VERSION = 1
FULL_CHECK_UNITS = 2000
RESULTS_SCHEMAS = {1: "results.v1.schema.json"}
VERDICTS = ("pass", "fail", "needs_review", "inconclusive")


def unit_entry(config, case_set, run_dir: Path, unit_id: str, meta: dict) -> dict:
    mode = meta.get("mode", "A")
    unit = resolve_unit(case_set, unit_id, meta)
    case = unit.case
    packet = load_packet(run_dir, unit_id)
    verdict = load_verdict(run_dir, unit_id)
    entry = {
        "unit_id": unit_id, "case_id": case.id, "repeat": unit.repeat, "feature": case.feature,
        "query": case.query, "labels": dict(case.labels), "provenance": case.provenance, "mode": mode,
        "stochastic": case.stochastic,
        "verdict": "not_judged", "reasons": [], "judgment": "", "expected": "", "observed": "",
        "judged_by": "", "override": None, "repair": None, "answers": {}, "mechanical": None,
        "rule_outcomes": [], "trace_ids": [], "trace_status": None,
        "latency": {"turn_ms": None, "wait_s": None, "followup_ms": None, "overhead_ms": None},
        "exit_code": None, "timed_out": False, "answer": "", "curated_trace": None,
        "followup_curated_trace": None, "judge_panel": None,
    }
    if packet is not None:
        if packet.get("case", {}).get("query") and packet["case"]["query"] != case.query:
            entry["query"] = packet["case"]["query"]  # pseudonymised korpus text
        trace = packet.get("trace") or {}
        follow = packet.get("followup") or {}
        entry["trace_ids"] = [t for t in (trace.get("trace_id"), (follow.get("trace") or {}).get("trace_id")) if t]
        entry["trace_status"] = trace.get("status")
        turn = packet.get("turn") or {}
        entry["latency"] = {
            "turn_ms": turn.get("wall_ms"),
            "wait_s": (packet.get("async") or {}).get("wait_s"),
            "followup_ms": (follow.get("turn") or {}).get("wall_ms") if follow else None,
            "overhead_ms": (packet.get("harness") or {}).get("overhead_ms"),
        }
        entry["exit_code"] = turn.get("exit_code")
        entry["timed_out"] = bool(turn.get("timed_out"))
        entry["answer"] = packet.get("answer") or ""
        entry["curated_trace"] = trace.get("curated")
        entry["followup_curated_trace"] = (follow.get("trace") or {}).get("curated") if follow else None
        check = check_packet(packet, case, config)
        entry["rule_outcomes"] = [o.to_json() for o in check.outcomes]
        entry["expected"], entry["observed"] = check.expected, check.observed
    if verdict is not None:
        for key in ("verdict", "reasons", "judgment", "expected", "observed", "judged_by", "override",
                    "repair", "answers", "mechanical", "judge_panel"):
            if key in verdict and verdict[key] is not None:
                entry[key] = verdict[key]
    if entry["judge_panel"] is None:
        entry["judge_panel"] = panel_for_unit(run_dir, unit_id)
    privacy = getattr(config, "privacy", None)
    if case.provenance == "korpus" and privacy is not None and not privacy.quote_allowed:
        from ..base.pii import withhold_quotes

        entry = withhold_quotes(entry)
    return entry


def build_results(config, case_set, run_dir: Path, *, allow_incomplete: bool = False,
                  catalog_version: str | None = None) -> dict:
    run_dir = Path(run_dir)
    meta = load_run(run_dir)
    units = meta.get("units", [])
    missing = [u for u in units if load_verdict(run_dir, u) is None]
    if missing and not allow_incomplete:
        raise UsageError(f"{len(missing)} unit(s) have no verdict yet: {', '.join(missing[:10])}"
                         f"{' …' if len(missing) > 10 else ''}; resume the run first (or finish with --allow-incomplete)")
    entries = [unit_entry(config, case_set, run_dir, u, meta) for u in units]
    summary = summarize(entries)
    finished = utc_now()
    run = {k: v for k, v in meta.items() if k not in ("units", "schema_version")}
    run["finished_at"] = iso(finished)
    run["duration_s"] = round((finished - parse_iso(meta["created_at"])).total_seconds(), 3)
    run["catalog_version"] = catalog_version
    disabled = [{"id": cid, "reason": _disabled_reason(case_set, cid)} for cid in meta.get("disabled_skipped", [])]
    return {"schema_version": RESULTS_SCHEMA_VERSION, "kind": "obai-e2e-results", "run": run,
            "summary": summary, "units": entries, "disabled": disabled}


def summarize(entries: list[dict]) -> dict:
    """The summary of results.json: units per verdict (not_judged included) and the total."""
    summary = {v: 0 for v in VERDICTS}
    summary["not_judged"] = 0
    for e in entries:
        summary[e["verdict"]] += 1
    summary["total"] = len(entries)
    return summary


def _disabled_reason(case_set, cid: str) -> str:
    try:
        return case_set.by_id(cid).disabled_reason
    except Exception:  # noqa: BLE001 - a case removed since the run started
        return ""


def summary_line(summary: dict) -> str:
    return " / ".join(f"{summary[v]} {v}" for v in VERDICTS)


def finalize(config, case_set, run_dir: Path, *, allow_incomplete: bool = False,
             catalog_version: str | None = None) -> dict:
    """Write results.json once (an identical rewrite is a no-op) and point runs/latest at the run."""
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    if path.exists():
        data = load_results(path)
    else:
        data = build_results(config, case_set, run_dir, allow_incomplete=allow_incomplete,
                             catalog_version=catalog_version)
        schema.check(data, RESULTS_SCHEMAS[RESULTS_SCHEMA_VERSION], source=str(path))
        write_once(path, dumps_json(data))
    link_latest(run_dir)
    return {"status": "finished", "run_dir": str(run_dir), "results": str(path),
            "report_md": str(run_dir / "report.md"), "report_html": str(run_dir / "report.html"),
            "summary": data["summary"], "summary_line": summary_line(data["summary"])}


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
