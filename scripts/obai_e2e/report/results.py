"""A unit's results entry (``UnitResult``), the run's summary and totals, and reading results back.

Enters: a unit's packet, its recorded verdict and its case. Leaves: its entry of results.json,
as one line of results.units.jsonl (written by report/finalize.py); the summary counts and
totals, added up a unit at a time; and the whole document of a (small) run for readers that
want it in memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..base.errors import ObaiError
from ..base.pii import withhold_quotes
from ..base.record import Record
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet_record import Packet, load_packet
from ..judge.models.outcomes import unit_panel
from ..judge.open_questions import not_asked, undecided
from ..judge.rubric import check_packet
from ..judge.rubric.check import CheckResult
from ..rundir.meta import RunMeta
from .record import load_verdict
from .rows import STREAMED_VERSION, open_results

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


def summary_line(summary: dict) -> str:
    return " / ".join(f"{summary[v]} {v}" for v in VERDICTS)


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


class Totals:
    """What the run cost in all (agent time, and tokens and cost where the traces carry them), added up a unit
    at a time: the same sums in the same order as adding up a list of the units."""

    def __init__(self) -> None:
        self.units = 0
        self._sums: dict[str, int | float | None] = {"turn_ms": None, "tokens": None, "cost": None}

    def add(self, entry: dict) -> None:
        self.units += 1
        for key, value in (("turn_ms", (entry.get("latency") or {}).get("turn_ms")),
                           ("tokens", (entry.get("usage") or {}).get("total_tokens")), ("cost", entry.get("cost"))):
            if value is not None:
                total = self._sums[key]
                self._sums[key] = (0 if total is None else total) + value

    def to_json(self) -> dict:
        return {"units": self.units, **{k: None if v is None else round(v, 6) for k, v in self._sums.items()}}


def totals(entries: list[dict]) -> dict:
    """What the run cost in all (see :class:`Totals`)."""
    acc = Totals()
    for e in entries:
        acc.add(e)
    return acc.to_json()

