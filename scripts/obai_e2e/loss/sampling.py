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


def unit_labels(labels: dict, provenance: str) -> dict:
    """A unit's facets as partitions see them: its labels plus its provenance."""
    out = dict(labels)
    out["provenance"] = provenance
    return out


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
    """Select up to n_min enabled cases per partition; returns units ``[{case_id, repeats}]``."""
    pool = [c for c in cases if not c.disabled]
    parts, units = [], []
    for p in plan.partitions:
        eligible = [c for c in pool if p.contains(unit_labels(c.labels, c.provenance))]
        eligible.sort(key=lambda c: _order(plan.seed, p.key, c.id))
        chosen = eligible[:p.n_min]
        parts.append(PartitionSample(p.key, dict(p.labels), p.n_min, len(eligible), tuple(c.id for c in chosen)))
        for c in chosen:
            units.append({"case_id": c.id, "repeats": repeats_for(c)})
    unassigned = tuple(c.id for c in pool
                       if not any(p.contains(unit_labels(c.labels, c.provenance)) for p in plan.partitions))
    return Sample(units=tuple(units), partitions=tuple(parts), unassigned=unassigned)
