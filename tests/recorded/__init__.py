"""Real packets and traces of the demo target, recorded once and kept as data.

``data/clean/<unit>.packet.json``   the packet the harness wrote for a unit of a clean run
``data/clean/<unit>.traces.json``   its trace(s) and spans as the opik SDK read them back
``data/faults/<fault>.*``           the same for the unit each fault of ``matrix.MATRIX`` targets
``data/infra/<reason>.*``           a unit that is inconclusive for each reason of ``matrix.INFRA``

``record.py`` re-records all of it (``uv run python tests/recorded/record.py``). Ids,
times and timings are whatever the recording produced: tests must not depend on them.
Every accessor returns a fresh copy, so a test may change what it gets.
"""
from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

from obai_e2e.config.cases import Case, CaseSet, load_cases_for
from obai_e2e.config.target import TargetConfig, load_target_config
from obai_e2e.drive.packet_record import Packet
from obai_e2e.judge.rubric.check import CheckResult, check_packet

from .matrix import INFRA as INFRA_TABLE
from .matrix import MATRIX

DATA = Path(__file__).resolve().parent / "data"
CLEAN, FAULTS, INFRA = "clean", "faults", "infra"


@cache
def config() -> TargetConfig:
    """The bundled target.yaml: the vocabulary and rubric patterns the demo is judged with."""
    return load_target_config(DATA.parents[2] / "cases" / "target.yaml")


@cache
def cases() -> CaseSet:
    return load_cases_for(config(), DATA.parents[2] / "cases" / "cases.yaml")


def case(case_id: str) -> Case:
    return cases().by_id(case_id)


@cache
def _read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def index() -> dict:
    return _read(DATA / "index.json")


def clean_units() -> list[str]:
    """Unit ids of the recorded clean run."""
    return list(index()["clean"])


def name_of(group: str, unit: str) -> str:
    """``clean/MD1`` or ``faults/zero_trades``: how a test id names a recording."""
    return f"{group}/{unit}"


def packet_json(group: str, unit: str) -> dict:
    """The stored packet of ``unit`` (a unit id for clean, a fault name for faults, a reason for infra)."""
    return copy.deepcopy(_read(DATA / group / f"{unit}.packet.json"))


def packet(group: str, unit: str) -> Packet:
    return Packet.from_json(packet_json(group, unit), source=f"{group}/{unit}.packet.json")


def traces(group: str, unit: str) -> list[dict]:
    """``[{role, complete, trace, spans}]``: role is turn, followup, failed_followup or candidate."""
    return copy.deepcopy(_read(DATA / group / f"{unit}.traces.json"))


def raw(group: str, unit: str, role: str = "turn") -> tuple[dict, list[dict]]:
    """(trace, spans) of one recorded trace, as ``trace/curate.py`` takes them."""
    found = [t for t in traces(group, unit) if t["role"] == role]
    assert len(found) == 1, f"{group}/{unit} has {len(found)} {role} trace(s)"
    return found[0]["trace"], found[0]["spans"]


def recordings() -> list[tuple[str, str]]:
    """Every recorded (group, unit): the clean units, the faults, then the infra reasons."""
    return [(CLEAN, u) for u in clean_units()] + [(FAULTS, f) for f in MATRIX] + [(INFRA, r) for r in INFRA_TABLE]


def clean_unit(case_id: str) -> str:
    """The recorded clean unit of a case (its first repeat for a stochastic case)."""
    return next(u for u in clean_units() if u == case_id or u.startswith(case_id + ".r"))


def check(p: Packet) -> CheckResult:
    """The mechanical rubric on a packet, with its case as the case file has it now."""
    return check_packet(p, case(p.case_id), config())


@cache
def checked(group: str, unit: str) -> CheckResult:
    """``check`` of a stored packet, computed once: read it, do not change it."""
    return check(packet(group, unit))


def tripped(result: CheckResult) -> set[str]:
    """Every code a check tripped (hard and soft)."""
    return {c for o in result.outcomes for c in o.tripped_codes}


def statuses(result: CheckResult) -> dict[str, str]:
    """Rule family → status (a family that runs twice, e.g. a follow-up contract, keeps its last)."""
    return {o.rule: o.status for o in result.outcomes}


def run_with_packets(root: Path, packets: dict[str, dict]) -> Path:
    """A new run of the recorded configuration and cases whose units (``unit id → packet JSON``) are
    driven already: each packet stored as that unit's, under its id."""
    from obai_e2e.config.selection import Filters
    from obai_e2e.run.plan import create_run

    ids = tuple(dict.fromkeys(u.split(".")[0] for u in packets))
    run_dir, _ = create_run(config(), cases(), Filters(ids=ids), root=root)
    for unit, data in packets.items():
        (run_dir / f"{unit}.json").write_text(json.dumps({**data, "unit_id": unit}), encoding="utf-8")
    return run_dir


def verdict_json(unit: str, verdict: str, reasons=(), answers=None, **extra) -> dict:
    """A verdict as a judge submits it (``answers`` only when given)."""
    out = {"schema_version": 1, "unit_id": unit, "verdict": verdict, "reasons": list(reasons),
           "judgment": "Checked against the trace.", "judged_by": "claude", **extra}
    if answers is not None:
        out["answers"] = answers
    return out
