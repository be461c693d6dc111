"""Finishing a run: results.json (head) and results.units.jsonl (rows), diff.json, the runs/latest link."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..base import jsonio, schema
from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import ObaiError, UsageError
from ..base.fsutil import dumps_json, fsync_file, write_once
from ..base.paths import runs_root
from ..base.pii import withhold_quotes
from ..base.record import Record
from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet_record import Packet, load_packet
from ..judge.models.outcomes import unit_panel
from ..judge.models.runner import report_block
from ..judge.open_questions import not_asked, undecided
from ..judge.panel.calibration import lines as calibration_lines
from ..judge.rubric import check_packet
from ..judge.rubric.check import CheckResult
from ..rundir.inputs import lines as inputs_lines, summary as inputs_summary
from ..rundir.meta import RunMeta, chosen_baseline, load_run
from . import judges_note
from .diff import build_diff, diff_fields, failing_not_before, markdown_lines, write_diff
from .diff import summary as diff_summary
from .diff import summary_line as diff_summary_line
from .record import load_verdict
from .report_md import NOT_ASKED_MARK, NOT_ASKED_SHOWN, insert_changes, insert_inputs, insert_judges, insert_not_asked
from .rows import (
    STREAMED_VERSION,
    UNITS_FILE,
    check_head,
    open_results,
    unit_checker,
    write_rows,
)
from .spool import EntrySpool
from .spool import discard as discard_spool

RESULTS_SCHEMA_VERSION = STREAMED_VERSION
VERDICTS = ("pass", "fail", "needs_review", "inconclusive")
# Fields a recorded verdict carries over into its unit's entry (when set).
VERDICT_FIELDS = ("verdict", "reasons", "judgment", "expected", "observed", "judged_by", "override",
                  "dropped", "repair", "answers", "mechanical", "judge_panel")


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
    channel: str = "cli"
    kind: str = "everyday"
    attack: str | None = None
    verdict: str = "not_judged"
    reasons: list[str] = field(default_factory=list)
    judgment: str = ""
    expected: str = ""
    observed: str = ""
    judged_by: str = ""
    override: dict[str, Any] | None = None
    dropped: dict[str, str] | None = None
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
    followup_answer: str | None = None  # an async unit's answer to its follow-up (the job's result)
    curated_trace: str | None = None
    followup_curated_trace: str | None = None
    judge_panel: dict[str, Any] | None = None
    not_asked: list[str] = field(default_factory=list)  # judgment questions no judge was asked
    undecided: list[str] = field(default_factory=list)  # judgment questions asked and decided by nobody
    trace_urls: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = None
    cost: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if out["attack"] is None:
            out.pop("attack")  # only adversarial units have one
        if out["dropped"] is None:
            out.pop("dropped")  # only a verdict that left out a soft code has one
        return out


def _add_usage(a: dict | None, b: dict | None) -> dict | None:
    if not a or not b:
        return a or b
    return {k: a.get(k, 0) + b.get(k, 0) for k in sorted(set(a) | set(b))}


def unit_result(config: TargetConfig, run_dir: Path, unit: Unit, meta: RunMeta, *,
                packet: Packet | None = None, check: CheckResult | None = None) -> UnitResult:
    """The results.json entry of ``unit``, from its packet and its recorded verdict.

    A caller that holds the stored packet (and the check made from it) passes them, so that
    neither is read or made again.
    """
    case = unit.case
    entry = UnitResult(unit_id=unit.id, case_id=case.id, repeat=unit.repeat, feature=case.feature,
                       query=case.query, labels=dict(case.labels), provenance=case.provenance, mode=meta.mode,
                       stochastic=case.stochastic, channel=unit.channel, kind=case.kind, attack=case.attack)
    questions: list[str] = []
    if packet is None:
        try:
            packet = load_packet(run_dir, unit.id)
        except ObaiError as exc:  # the unit's verdict records it as a harness_error
            entry.observed = f"the packet could not be read: {exc}"[:500]
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
        entry.followup_answer = follow.answer if follow else None
        entry.curated_trace = packet.trace.curated
        entry.followup_curated_trace = follow.trace.curated if follow else None
        entry.trace_urls = [u for u in (packet.trace.url, follow.trace.url if follow else None) if u]
        digests = [d for d in (packet.trace.digest, follow.trace.digest if follow else None) if d is not None]
        for d in digests:
            entry.usage = _add_usage(entry.usage, d.usage)
        costs = [d.cost for d in digests if d.cost is not None]
        entry.cost = round(sum(costs), 8) if costs else None
        try:
            check = check or check_packet(packet, case, config)
        except Exception as exc:  # noqa: BLE001 - the unit's verdict records it as a harness_error
            entry.observed = f"the packet could not be checked: {type(exc).__name__}: {exc}"[:500]
        else:
            entry.rule_outcomes = [o.to_json() for o in check.outcomes]
            questions = [q["id"] for q in check.questions]
            entry.expected, entry.observed = check.expected, check.observed
    verdict = load_verdict(run_dir, unit.id)
    if verdict is not None:
        for key in VERDICT_FIELDS:
            value = getattr(verdict, key)
            if value is not None:
                setattr(entry, key, value)
    if entry.judge_panel is None:
        entry.judge_panel = unit_panel(run_dir, unit.id)
    entry.not_asked = not_asked(questions, entry.verdict, entry.judge_panel, entry.answers)
    entry.undecided = undecided(questions, entry.verdict, entry.judge_panel, entry.answers)
    if case.provenance == "korpus" and config.privacy is not None and not config.privacy.quote_allowed:
        entry = UnitResult.from_json(withhold_quotes(entry.to_json()))
    return entry


def build_results(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *,
                  allow_incomplete: bool = False, catalog_version: str | None = None,
                  spool: EntrySpool | None = None, unasked: list | None = None) -> dict:
    """Write the rows file (each unit's entry schema-checked as it is written) and return the head.

    One entry is built (or taken from ``spool``) at a time and written out, so memory does not
    grow with the entries; the head (run, summary, totals, the rows file's count and SHA-256)
    comes last. ``unasked`` receives (unit id, questions not asked) of the first units that have any.
    """
    run_dir = Path(run_dir)
    meta = load_run(run_dir)
    unasked = [] if unasked is None else unasked
    missing = [u.id for u in units if load_verdict(run_dir, u.id) is None]
    if missing and not allow_incomplete:
        raise UsageError(f"{len(missing)} unit(s) have no verdict yet: {', '.join(missing[:10])}"
                         f"{' …' if len(missing) > 10 else ''}; resume the run first (or finish with --allow-incomplete)")
    summary = summarize([])
    costs: list[dict] = []     # the few fields totals() adds up, one small dict per unit
    check = unit_checker()

    def entries():
        for u in units:
            entry = (spool.get(u.id) if spool is not None else None) or unit_result(config, run_dir, u, meta).to_json()
            check(entry, f"{run_dir / UNITS_FILE}: unit {u.id}")
            count(summary, entry)
            if entry.get("not_asked") and len(unasked) < NOT_ASKED_SHOWN:
                unasked.append((entry["unit_id"], entry["not_asked"]))
            costs.append({"latency": {"turn_ms": (entry.get("latency") or {}).get("turn_ms")},
                          "usage": {"total_tokens": (entry.get("usage") or {}).get("total_tokens")},
                          "cost": entry.get("cost")})
            yield entry

    units_file = write_rows(run_dir / UNITS_FILE, entries())
    finished = utc_now()
    run = {k: v for k, v in meta.to_json().items() if k not in ("units", "schema_version")}
    run["finished_at"] = iso(finished)
    run["duration_s"] = round((finished - parse_iso(meta.created_at)).total_seconds(), 3)
    run["catalog_version"] = catalog_version
    disabled = [{"id": cid, "reason": _disabled_reason(case_set, cid)} for cid in meta.disabled_skipped]
    out = {"schema_version": RESULTS_SCHEMA_VERSION, "kind": "obai-e2e-results", "run": run,
           "summary": summary, "totals": totals(costs), "disabled": disabled, "units_file": units_file}
    judges = report_block(run_dir)
    if judges is not None:
        out["judges"] = judges
    out["inputs"] = inputs_summary(meta.inputs)  # which live inputs changed while the run went on
    return out


def summarize(entries: list[dict]) -> dict:
    """The summary of results.json: units per verdict (not_judged included), the total, and the judgment
    questions no judge was asked (``questions_not_asked``) or nobody decided (``questions_undecided``)."""
    summary = {v: 0 for v in VERDICTS}
    summary.update(dict.fromkeys(("not_judged", "total", *(f"{k}_{w}" for k in ("units", "questions")
                                                            for w in ("not_asked", "undecided"))), 0))
    for e in entries:
        count(summary, e)
    return summary


def count(summary: dict, entry: dict) -> None:
    """Add one unit's entry to ``summary``."""
    summary[entry["verdict"]] += 1
    summary["total"] += 1
    for key in ("not_asked", "undecided"):
        summary[f"units_{key}"] += bool(entry.get(key))
        summary[f"questions_{key}"] += len(entry.get(key) or ())


def not_asked_line(summary: dict) -> str | None:
    """The terminal's and the chat's line on judgment questions no judge was asked or decided, or None."""
    n, u = summary.get("questions_not_asked") or 0, summary.get("questions_undecided") or 0
    units, asked = summary.get("units_not_asked") or 0, f"{u} asked but decided by nobody"
    if not u:
        return (f"judgment questions not asked: {n} in {units} unit(s) (no panel, no judge: undecided, not passed; "
                f"--fail-on not_asked makes them fail the run)") if n else None
    return (f"judgment questions undecided: {f'{n} not asked in {units} unit(s), ' if n else ''}{asked} in "
            f"{summary.get('units_undecided') or 0} unit(s) (no majority): undecided, not passed; --fail-on "
            f"not_asked makes them fail the run")


def _disabled_reason(case_set: CaseSet, cid: str) -> str:
    try:
        return case_set.by_id(cid).disabled_reason
    except Exception:  # noqa: BLE001 - a case removed since the run started
        return ""


def summary_line(summary: dict) -> str:
    return " / ".join(f"{summary[v]} {v}" for v in VERDICTS)


def finalize(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *,
             allow_incomplete: bool = False, catalog_version: str | None = None,
             baseline: Path | None = None, spool: EntrySpool | None = None) -> dict:
    """Write diff.json, results.json (the head) and its rows once, put what changed at the top of
    report.md, and point runs/latest at the run.

    The rows file is written first (to a temporary name, then renamed), the head last: a run
    interrupted in between has no results.json and is finished again from its packets and
    verdicts. ``baseline`` (a run directory or its results.json) defaults to the one recorded
    when the run was created: the same baseline the loss layer compares with. ``spool`` holds
    the entries of the units judged in this process (see report.spool).
    """
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    diff_path = run_dir / "diff.json"
    unasked: list | None = None
    if path.exists():
        data = open_results(path).head
        diff = jsonio.load(diff_path) if diff_path.exists() else None
    else:
        unasked = []
        data = build_results(config, case_set, run_dir, units, allow_incomplete=allow_incomplete,
                             catalog_version=catalog_version, spool=spool, unasked=unasked)
        base_path = chosen_baseline(run_dir, baseline)
        base = read_baseline(base_path)
        # the diff compares unit by unit: it reads the rows just written back
        entries = [diff_fields(u) for _, u in _rows_of(run_dir, data)]
        diff = build_diff(data["run"]["run_id"], entries, base)
        del entries
        if diff["baseline"] is not None:
            diff["baseline"]["results"] = str(results_path_of(base_path))
        diff["totals"] = {"run": data["totals"], "baseline": (base or {}).get("totals")}
        data["diff"] = diff_summary(diff)
        check_head(data, str(path))
        schema.check(diff, "diff.v1.schema.json", source=str(diff_path))
        write_diff(run_dir, diff)
        if (run_dir / "report.md").exists():
            fsync_file(run_dir / "report.md")  # its rows were appended without one
        write_once(path, dumps_json(data))
    if spool is not None:
        spool.close()
    discard_spool(run_dir)  # also one a killed process left behind
    if diff is not None:
        insert_changes(run_dir / "report.md", (diff.get("baseline") or {}).get("run_id"), markdown_lines(diff))
    if data.get("judges") and (run_dir / "report.md").exists():
        j = data["judges"]
        insert_judges(run_dir / "report.md", judges_note.headline(j),
                      judges_note.details(j) + calibration_lines(j.get("calibration")),
                      warn=judges_note.incomplete(j))
    s = data["summary"]
    if s.get("questions_not_asked") and (run_dir / "report.md").exists():
        if unasked is None:  # finished before: the rows are read again (only when the note is missing)
            text = (run_dir / "report.md").read_text(encoding="utf-8")[:8192]
            unasked = [] if NOT_ASKED_MARK in text else [
                (u["unit_id"], u["not_asked"]) for _, u in open_results(path) if u.get("not_asked")]
        insert_not_asked(run_dir / "report.md", s["questions_not_asked"], s.get("units_not_asked", 0), unasked)
    insert_inputs(run_dir / "report.md", inputs_lines(data.get("inputs")))
    link_latest(run_dir)
    return {"status": "finished", "run_dir": str(run_dir), "results": str(path),
            "inputs_lines": inputs_lines(data.get("inputs")),
            "report_md": str(run_dir / "report.md"), "report_html": str(run_dir / "report.html"),
            "summary": data["summary"], "summary_line": summary_line(data["summary"]),
            "not_asked_line": not_asked_line(data["summary"]),
            "judges_left_undecided": list((data.get("judges") or {}).get("left_undecided") or []),
            "diff": str(diff_path) if diff is not None else None,
            "diff_counts": diff["counts"] if diff is not None else None,
            "baseline_run_id": ((diff or {}).get("baseline") or {}).get("run_id"),
            "failing_not_before": failing_not_before(diff) if diff is not None else None,
            "diff_line": diff_summary_line(diff) if diff is not None else None}


def results_path_of(path: Path) -> Path:
    """A run directory's results.json, or the path itself when it names a file."""
    path = Path(path)
    return path / "results.json" if path.is_dir() else path


def read_baseline(path: Path | None) -> dict | None:
    """The baseline's results (a run directory or its results.json), or None without one; each
    unit with the fields the diff compares (diff.diff_fields)."""
    return None if path is None else read_results_json(results_path_of(path), unit=diff_fields)


def totals(entries: list[dict]) -> dict:
    """What the run cost in all: agent time, and tokens and cost where the traces carry them."""
    def total(values):
        values = [v for v in values if v is not None]
        return round(sum(values), 6) if values else None
    return {"units": len(entries),
            "turn_ms": total((e.get("latency") or {}).get("turn_ms") for e in entries),
            "tokens": total((e.get("usage") or {}).get("total_tokens") for e in entries),
            "cost": total(e.get("cost") for e in entries)}


def _rows_of(run_dir: Path, head: dict):
    """The rows of a head not yet written (finalize's own diff), through the one reader."""
    from .rows import ResultsRows

    spec = head["units_file"]
    return ResultsRows(Path(run_dir) / "results.json", head, spec["count"], units_path=Path(run_dir) / spec["path"],
                       sha256=spec["sha256"], check=False)


def read_results_json(path: Path, *, unit: Callable[[dict], dict] | None = None) -> dict:
    """A results.json of either layout with all its units, refusing an unknown schema version.

    Rows are read through the one reader (``rows.open_results``) and checked against the
    head's count and SHA-256, but not against the schema: for readers that only display.
    ``unit``: what to keep of each unit (``ResultsRows.load``).
    """
    return open_results(path, check=False).load(unit)


def load_results(path: Path) -> dict:
    """A results.json of either layout with all its units, checked as ``rows.open_results`` checks."""
    return open_results(path).load()


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
