"""The decision rule: which partition × category cells got provably worse than the baseline.

A cell is compared only when it is ``scored`` on both sides with a defined se (under-
populated, suppressed and unbewertbar cells never are). With k compared cells the
critical value is z = 2 + ln(k)/2; the interval is delta ± z·se_delta; a cell is a
finding only when its lower bound exceeds the mde. Findings are ordered by lower bound,
descending, never by delta. The paired figures and the detectable effect are extra
columns for comparison.json; they never change which cells are findings.

The paired se of a model_judged cell adds both runs' rater variance to the spread of
the per-unit differences, as the unpaired se does on each side:
se_paired = √(σ_d² + σ_r,base² + σ_r,new²) / √n.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .cells import SCORED, SUPPRESSED, UNBEWERTBAR
from .detect import POWER, POWER_Z, detectable_effect, needs_units, sentence
from .score import Scored
from .stats import snap, z_critical


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
    paired_rater_variance: float | None = None

    def to_json(self, z: float) -> dict:
        return {"partition": self.partition, "labels": self.labels, "category": self.category,
                "loss_new": self.loss_new, "loss_base": self.loss_base, "se_new": self.se_new,
                "se_base": self.se_base, "n_new": self.n_new, "n_base": self.n_base, "delta": self.delta,
                "se_delta": self.se_delta, "z": z, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "finding": self.finding, "detectable_effect": self.detectable_effect,
                "paired": {"n": self.paired_n, "delta": self.paired_delta, "se": self.paired_se,
                           "ci_low": self.paired_ci_low, "rater_variance": self.paired_rater_variance}}


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
    partitions: list = field(default_factory=list)   # per declared partition: what this comparison could detect

    def to_json(self, catalog_version: str) -> dict:
        z = self.z if self.z is not None else 0.0
        return {"schema_version": 1, "kind": "obai-e2e-comparison", "run_id": self.run_id,
                "baseline_run_id": self.baseline_run_id, "catalog_version": catalog_version,
                "baseline_mode": "B", "mde": self.mde, "k": self.k, "z": self.z,
                "power": POWER, "power_z": POWER_Z,
                "cells_not_compared": self.skipped, "findings": len(self.findings),
                "cells": [c.to_json(z) for c in self.cells],
                "finding_order": [[c.partition, c.category] for c in self.findings],
                "partitions": self.partitions}


def _comparable(cell: dict | None) -> bool:
    return bool(cell) and cell["status"] == SCORED and cell["se"] is not None and cell["loss"] is not None


def _paired(p, q, cat: str, z: float, rater_variance: float) -> tuple[int, float | None, float | None, float | None]:
    """Per-unit differences over the case ids both sides scored in this cell; ``rater_variance`` is
    σ_r,new² + σ_r,base² for a model_judged cell, else 0."""
    a, b = p.columns[cat], q.columns[cat]
    if p.cases != q.cases:  # line the base up with the new run's cases
        pos = {cid: i for i, cid in enumerate(q.cases)}
        mine = [i for i, cid in enumerate(p.cases) if cid in pos]
        a, b = a[mine], b[[pos[p.cases[i]] for i in mine]]
    diffs = (a - b)[~(np.isnan(a) | np.isnan(b))]
    n = len(diffs)
    if n < 2:
        return n, None, None, None
    d = math.fsum(diffs.tolist()) / n
    dev = diffs - d
    sd = snap(math.sqrt(math.fsum((dev * dev).tolist()) / (n - 1)))
    se = snap(math.sqrt(sd * sd + rater_variance) / math.sqrt(n))
    return n, d, se, d - z * se


def _rater_variance(scored: Scored, cat: str) -> float:
    info = scored.suite["raters"].get(cat)
    return (info or {}).get("rater_variance") or 0.0


def _partition_detection(p, q, cells: list, mde: float) -> dict:
    """What this comparison could detect in one partition, as figures and the plain sentence."""
    new, base = p.json, q.json if q is not None else None
    effect = max((c.detectable_effect for c in cells), default=None)
    needs = needs_units(new["n"], p.n_min) if new["status"] not in (SUPPRESSED, UNBEWERTBAR) else None
    base_needs = (needs_units(base["n"], q.n_min) if base is not None and base["status"] not in
                  (SUPPRESSED, UNBEWERTBAR) else None)
    compared = {c.category for c in cells}
    short = {}
    for cat, cell in new["by_category"].items():
        other = (base or {}).get("by_category", {}).get(cat) or {}
        if cat not in compared and cell["status"] == "unterbelegt" and not needs:
            short[cat] = needs_units(cell["n"], p.n_min)
        elif cat not in compared and other.get("status") == "unterbelegt" and not base_needs:
            short[f"{cat} (baseline)"] = needs_units(other["n"], q.n_min)
    if effect is not None:
        text = sentence(status=SCORED, effects={c.category: c.detectable_effect for c in cells}, needs=0,
                        short_categories=short)
    elif new["status"] in (SUPPRESSED, UNBEWERTBAR) or needs:
        text = sentence(status=new["status"], effects=None, needs=needs)
    elif base is None or base["status"] in (SUPPRESSED, UNBEWERTBAR) or base_needs:
        text = sentence(status=base["status"] if base else UNBEWERTBAR, effects=None, needs=base_needs,
                        side="the baseline: ")
    else:
        text = sentence(status=SCORED, effects=None, needs=0)
    return {"partition": p.key, "labels": dict(p.labels), "n_new": new["n"], "n_base": base["n"] if base else 0,
            "n_min": p.n_min, "compared_cells": len(cells), "detectable_effect": effect, "needs_units": needs,
            "baseline_needs_units": base_needs, "text": text}


def compare(new: Scored, base: Scored, *, mde: float | None = None) -> Comparison:
    """Compare every declared partition × category cell of ``new`` with ``base``."""
    mde = new.plan.mde if mde is None else mde
    pairs, skipped = [], 0
    declared = [p for p in new.partitions if not p.unassigned]
    for p in declared:
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
    judged = {c.id for c in new.catalog.categories if c.model_judged}
    cells = []
    for p, q, cat, a, b in pairs:
        delta = a["loss"] - b["loss"]
        se_delta = snap(math.sqrt(a["se"] ** 2 + b["se"] ** 2))
        low, high = delta - z * se_delta, delta + z * se_delta
        rater = _rater_variance(new, cat) + _rater_variance(base, cat) if cat in judged else 0.0
        pn, pd, pse, plow = _paired(p, q, cat, z, rater)
        cells.append(CellComparison(
            partition=p.key, labels=dict(p.labels), category=cat, loss_new=a["loss"], loss_base=b["loss"],
            se_new=a["se"], se_base=b["se"], n_new=a["n"], n_base=b["n"], delta=delta, se_delta=se_delta,
            ci_low=low, ci_high=high, finding=low > mde, detectable_effect=detectable_effect(mde, z, se_delta),
            paired_n=pn, paired_delta=pd, paired_se=pse, paired_ci_low=plow,
            paired_rater_variance=rater if cat in judged else None))
    findings = sorted((c for c in cells if c.finding), key=lambda c: (-c.ci_low, c.partition, c.category))
    partitions = [_partition_detection(p, base.partition(p.key), [c for c in cells if c.partition == p.key], mde)
                  for p in declared]
    return Comparison(run_id=new.suite.get("run_id"), baseline_run_id=base.suite.get("run_id"), mde=mde, k=k, z=z,
                      cells=cells, findings=findings, skipped=skipped, partitions=partitions)
