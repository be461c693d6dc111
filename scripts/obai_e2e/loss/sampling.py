"""Stratified sampling: which cases a run needs per partition, and how many repeats each.

Each partition draws up to its n_min cases from the pool in a fixed pseudo-random order
(SHA-256 of the plan's seed, the partition and the case id), so the same plan and pool
always give the same sample. A partition with fewer cases than n_min takes all of them
and is flagged ``thin``: a stratified sample over-represents it relative to its share of
the pool. Repeats: deterministic anchors run once, stochastic cases at least 3 times
(repeats average within a unit; they never add to n).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

from .plan import Plan

MIN_STOCHASTIC_REPEATS = 3


def unit_labels(labels: dict, provenance: str, channel: str | None = None, kind: str | None = None) -> dict:
    """A unit's facets as partitions see them: its labels plus provenance, channel and kind.

    A unit from before channels and kinds existed has neither: partitions read it as cli
    and everyday.
    """
    out = dict(labels)
    out["provenance"] = provenance
    if channel:
        out["channel"] = channel
    if kind:
        out["kind"] = kind
    return out


def case_units(case) -> list[tuple[str, dict]]:
    """(unit key, facets) for each channel of a case."""
    channels = getattr(case, "channels", ("cli",))
    kind = getattr(case, "kind", "everyday")
    return [(case.id if ch == "cli" else f"{case.id}.{ch}", unit_labels(case.labels, case.provenance, ch, kind))
            for ch in channels]


def repeats_for(case) -> int:
    return max(MIN_STOCHASTIC_REPEATS, int(case.repeats)) if case.stochastic else 1


@dataclass(frozen=True)
class PartitionSample:
    """What sampling found and took for one partition."""

    key: str
    labels: dict
    n_min: int
    available: int
    selected: tuple[str, ...]

    @property
    def thin(self) -> bool:
        return self.available < self.n_min

    def to_json(self) -> dict:
        return {"partition": self.key, "labels": self.labels, "n_min": self.n_min, "available": self.available,
                "selected": len(self.selected), "thin": self.thin, "shortfall": max(0, self.n_min - self.available),
                "case_ids": list(self.selected)}


@dataclass(frozen=True)
class Sample:
    """The planned units of a run, per partition."""

    units: tuple[dict, ...]
    partitions: tuple[PartitionSample, ...]
    unassigned: tuple[str, ...]

    @property
    def planned_executions(self) -> int:
        return sum(u["repeats"] for u in self.units)

    def to_json(self) -> dict:
        return {"units": [dict(u) for u in self.units], "partitions": [p.to_json() for p in self.partitions],
                "unassigned": list(self.unassigned), "planned_units": len(self.units),
                "planned_executions": self.planned_executions,
                "thin_partitions": [p.key for p in self.partitions if p.thin]}


def _order(seed: str, key: str, case_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}\x00{case_id}".encode("utf-8")).hexdigest()


def sample(plan: Plan, cases: Iterable) -> Sample:
    """Select up to n_min enabled units per partition; returns the cases they need ``[{case_id, repeats}]``.

    A unit is a case on one of its channels; a case selected on any channel runs on all of
    the run's channels (a case is what a run selects).
    """
    pool = [(c, key, labels) for c in cases if not c.disabled for key, labels in case_units(c)]
    parts, units, taken = [], [], set()
    for p in plan.partitions:
        eligible = [(c, key) for c, key, labels in pool if p.contains(labels)]
        eligible.sort(key=lambda ck: _order(plan.seed, p.key, ck[1]))
        chosen = eligible[:p.n_min]
        parts.append(PartitionSample(p.key, dict(p.labels), p.n_min, len(eligible), tuple(k for _, k in chosen)))
        for c, _ in chosen:
            if c.id not in taken:
                taken.add(c.id)
                units.append({"case_id": c.id, "repeats": repeats_for(c)})
    unassigned = tuple(key for _, key, labels in pool if not any(p.contains(labels) for p in plan.partitions))
    return Sample(units=tuple(units), partitions=tuple(parts), unassigned=unassigned)
