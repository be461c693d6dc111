"""The cells of suite.json: unit means in, each cell's statistics, status and detection figures out.

A cell is one partition × category (or the partition's unit total L). Its loss is the
mean of the unit means m_u present; stddev_between their sample SD; stddev_within the
pooled SD of the repeats around their unit means; se = s/√n with s = stddev_between, or
√(stddev_between² + σ_r²) for a model_judged category (σ_r²: the run's rater variance).
"""
from __future__ import annotations

import math

import numpy as np

from .catalog import Catalog
from .detect import POWER, POWER_Z, SQRT2, detectable_effect, needs_units, sentence
from .stats import mean, pooled_sd, snap, z_critical
from .table import LossTable

SCORED, UNTERBELEGT, SUPPRESSED, UNBEWERTBAR = "scored", "unterbelegt", "suppressed", "unbewertbar"


def cell_stats(values: np.ndarray, sum_sq: float, dof: int, n_min: int, suppressed: bool,
               rater_var: float | None, judged: bool) -> dict:
    """The statistics of one cell from the unit means present (no NaN)."""
    n = len(values)
    out = {"n": n, "loss": None, "stddev_between": None, "se": None, "stddev_within": None}
    if judged:
        out["rater_variance"] = rater_var
    if suppressed:
        out["status"] = SUPPRESSED
        return out
    if n == 0:
        out["status"] = UNBEWERTBAR
        return out
    loss = math.fsum(values.tolist()) / n
    out["loss"] = loss
    sb = None
    if n >= 2:
        d = values - loss
        sb = snap(math.sqrt(math.fsum((d * d).tolist()) / (n - 1)))
    out["stddev_between"] = sb
    out["stddev_within"] = pooled_sd(sum_sq, dof)
    if n >= 2:
        s = math.sqrt(sb * sb + (rater_var or 0.0)) if judged else sb
        out["se"] = snap(s / math.sqrt(n))
    out["status"] = UNTERBELEGT if n < n_min else SCORED
    return out


def rate(num: int, den: int) -> float | None:
    return num / den if den else None


def raters_of(catalog: Catalog, table: LossTable) -> dict:
    """Per model_judged category: repeats rated, double-rated, and the rater variance σ_r²."""
    out = {}
    for c in catalog.categories:
        if not c.model_judged:
            continue
        rated, double, variances = table.rated[c.index], table.double_rated[c.index], table.rater_variances[c.index]
        out[c.id] = {"rated": rated, "double_rated": double, "share": rate(double, rated),
                     "rater_variance": snap(mean(variances)) if variances else None}
    return out


def detection_of(parts: list, mde: float) -> dict:
    """Per cell and partition, what a comparison with a like-for-like baseline could detect (see detect.py)."""
    listable = [c for d in parts if not d.unassigned for c in d.json["by_category"].values()
                if c["status"] == SCORED and c["se"] is not None]
    k = len(listable)
    z = z_critical(k) if k else None
    for d in parts:
        short = {}
        effects = {}
        for cat, c in d.json["by_category"].items():
            effect = None
            if not d.unassigned and z is not None and c["status"] == SCORED and c["se"] is not None:
                effect = detectable_effect(mde, z, SQRT2 * c["se"])
                effects[cat] = effect
            c["detectable_effect"] = effect
            c["needs_units"] = needs_units(c["n"], d.n_min) if c["status"] in (SCORED, UNTERBELEGT) else None
            if c["status"] == UNTERBELEGT and d.json["n"] >= d.n_min:
                short[cat] = c["needs_units"]
        status = d.json["status"]
        needs = needs_units(d.json["n"], d.n_min) if status in (SCORED, UNTERBELEGT) else None
        effect = max(effects.values()) if effects else None
        d.json["detectable_effect"] = None if d.unassigned else effect
        d.json["needs_units"] = None if d.unassigned else needs
        d.json["detection"] = sentence(status=status, effects=effects, needs=needs, short_categories=short,
                                       unassigned=d.unassigned)
    return {"k": k, "z": z, "power": POWER, "power_z": POWER_Z,
            "assumed_baseline": "same n and spread as this run: se_delta = √2·se"}


def count_cells(suite: dict, status: str) -> int:
    return sum(1 for p in suite["partitions"] for c in p["by_category"].values() if c["status"] == status)
