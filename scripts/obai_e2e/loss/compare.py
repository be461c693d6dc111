"""The decision rule: which partition × category cells got provably worse than the baseline.

A cell is compared only when it is ``scored`` on both sides with a defined se (under-
populated, suppressed and unbewertbar cells never are). With k compared cells the
critical value is z = 2 + ln(k)/2; the interval is delta ± z·se_delta; a cell is a
finding only when its lower bound exceeds the mde. Findings are ordered by lower bound,
descending, never by delta. The paired figures and the detectable effect are extra
columns for comparison.json; they never change which cells are findings.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .score import SCORED, Scored
from .stats import mean, sample_sd, snap, z_critical

POWER_Z = 0.84  # one-sided normal quantile for 80 % power


@dataclass
class CellComparison:
    """One compared cell."""

    partition: str
    labels: dict
    category: str
    loss_new: float
    loss_base: float
    se_new: float
    se_base: float
    n_new: int
    n_base: int
    delta: float
    se_delta: float
    ci_low: float
    ci_high: float
    finding: bool
    detectable_effect: float
    paired_n: int
    paired_delta: float | None
    paired_se: float | None
    paired_ci_low: float | None

    def to_json(self, z: float) -> dict:
        return {"partition": self.partition, "labels": self.labels, "category": self.category,
                "loss_new": self.loss_new, "loss_base": self.loss_base, "se_new": self.se_new,
                "se_base": self.se_base, "n_new": self.n_new, "n_base": self.n_base, "delta": self.delta,
                "se_delta": self.se_delta, "z": z, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "finding": self.finding, "detectable_effect": self.detectable_effect,
                "paired": {"n": self.paired_n, "delta": self.paired_delta, "se": self.paired_se,
                           "ci_low": self.paired_ci_low}}


@dataclass
class Comparison:
    """All compared cells and the findings among them."""

    run_id: str | None
    baseline_run_id: str | None
    mde: float
    k: int
    z: float | None
    cells: list
    findings: list
    skipped: int

    def to_json(self, catalog_version: str) -> dict:
        z = self.z if self.z is not None else 0.0
        return {"schema_version": 1, "kind": "obai-e2e-comparison", "run_id": self.run_id,
                "baseline_run_id": self.baseline_run_id, "catalog_version": catalog_version,
                "baseline_mode": "B", "mde": self.mde, "k": self.k, "z": self.z,
                "cells_not_compared": self.skipped, "findings": len(self.findings),
                "cells": [c.to_json(z) for c in self.cells],
                "finding_order": [[c.partition, c.category] for c in self.findings]}


def _comparable(cell: dict | None) -> bool:
    return bool(cell) and cell["status"] == SCORED and cell["se"] is not None and cell["loss"] is not None


def _paired(p, q, cat: str, z: float) -> tuple[int, float | None, float | None, float | None]:
    """Per-unit differences over the case ids both sides scored in this cell."""
    if p.cases == q.cases:  # the usual case: the same cases ran on both sides, columns line up
        diffs = [a - b for a, b in zip(p.columns[cat], q.columns[cat]) if a is not None and b is not None]
    else:
        new_means, base_means = p.unit_means(cat), q.unit_means(cat)
        diffs = [new_means[c] - base_means[c] for c in new_means if c in base_means]
    if len(diffs) < 2:
        return len(diffs), None, None, None
    d = mean(diffs)
    se = snap(sample_sd(diffs) / math.sqrt(len(diffs)))
    return len(diffs), d, se, d - z * se


def compare(new: Scored, base: Scored, *, mde: float | None = None) -> Comparison:
    """Compare every declared partition × category cell of ``new`` with ``base``."""
    mde = new.plan.mde if mde is None else mde
    pairs, skipped = [], 0
    for p in new.partitions:
        if p.unassigned:
            continue
        q = base.partition(p.key)
        for cat in new.catalog.ids:
            a = p.json["by_category"].get(cat)
            b = q.json["by_category"].get(cat) if q is not None else None
            if _comparable(a) and _comparable(b):
                pairs.append((p, q, cat, a, b))
            else:
                skipped += 1
    k = len(pairs)
    z = z_critical(k) if k else None
    cells = []
    for p, q, cat, a, b in pairs:
        delta = a["loss"] - b["loss"]
        se_delta = snap(math.sqrt(a["se"] ** 2 + b["se"] ** 2))
        low, high = delta - z * se_delta, delta + z * se_delta
        pn, pd, pse, plow = _paired(p, q, cat, z)
        cells.append(CellComparison(
            partition=p.key, labels=dict(p.labels), category=cat, loss_new=a["loss"], loss_base=b["loss"],
            se_new=a["se"], se_base=b["se"], n_new=a["n"], n_base=b["n"], delta=delta, se_delta=se_delta,
            ci_low=low, ci_high=high, finding=low > mde, detectable_effect=mde + (z + POWER_Z) * se_delta,
            paired_n=pn, paired_delta=pd, paired_se=pse, paired_ci_low=plow))
    findings = sorted((c for c in cells if c.finding), key=lambda c: (-c.ci_low, c.partition, c.category))
    return Comparison(run_id=new.suite.get("run_id"), baseline_run_id=base.suite.get("run_id"), mde=mde, k=k, z=z,
                      cells=cells, findings=findings, skipped=skipped)
