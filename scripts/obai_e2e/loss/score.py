"""suite.json: per partition and per partition × category, the loss and its spreads.

A unit is one case in one run; its repeats are the results.json entries with that case id.
Per cell: the unit mean m_u over the unit's completed repeats that scored the category;
loss = mean of the m_u; stddev_between = sample SD of the m_u; stddev_within = SD of the
repeats around their unit means, pooled (flake detector, never compared); se = s/√n with
s = stddev_between, or √(stddev_between² + σ_r²) for a model_judged category (σ_r²: rater
variance of the run). See references/loss-layer.md for the status rules.
"""
from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field

from ..base import schema
from .catalog import Catalog
from .plan import Plan
from .sampling import unit_labels
from .stats import (
    mean,
    pooled_sd,
    sample_sd,
    sample_variance,
    snap,
    squares_around_mean,
)
from .units import ABORTED, COMPLETED, RepeatLoss, UnitScorer

SCHEMA = "suite.v1.schema.json"
SUITE_SCHEMA_VERSION = 1
ABORT_LIMIT = 0.10
DOUBLE_RATED_SHARE = 0.20
SCORED, UNTERBELEGT, SUPPRESSED, UNBEWERTBAR = "scored", "unterbelegt", "suppressed", "unbewertbar"
UNASSIGNED = "unassigned"
TOTAL = None  # the cell index of the unit total L


@dataclass
class PartitionData:
    """One partition of a scored run: its members and the unit means of every cell."""

    key: str
    labels: dict
    weight: float
    n_min: int
    unassigned: bool
    cases: list = field(default_factory=list)           # case ids, in results order
    columns: dict = field(default_factory=dict)         # category id (None = total) -> [m_u or None], as cases
    json: dict = field(default_factory=dict)

    def unit_means(self, category: str | None) -> dict:
        """{case id: m_u} of one cell (category None: the unit total L)."""
        return {cid: m for cid, m in zip(self.cases, self.columns.get(category, ())) if m is not None}


@dataclass
class Scored:
    """A scored run: suite.json plus what comparison and citations need."""

    suite: dict
    partitions: list
    repeats: dict                                       # case id -> [RepeatLoss] in results order
    catalog: Catalog
    plan: Plan
    mode: str

    def partition(self, key: str) -> PartitionData | None:
        for p in self.partitions:
            if p.key == key:
                return p
        return None


def _abort_message(rate: float) -> str:
    return (f"abort rate {rate:.1%} exceeds 10 %: too many units ended inconclusive (no trace, timeout, store "
            "down, harness error); the score is withheld: fix the harness, not the system under test")


def _cell(column: list, sum_sq: float, dof: int, n_min: int, suppressed: bool, rater_var: float | None,
          judged: bool) -> dict:
    values = [x for x in column if x is not None]
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
    sb = sample_sd(values)
    out["loss"] = mean(values)
    out["stddev_between"] = sb
    out["stddev_within"] = pooled_sd(sum_sq, dof)
    if n >= 2:
        s = math.sqrt(sb * sb + (rater_var or 0.0)) if judged else sb
        out["se"] = snap(s / math.sqrt(n))
    out["status"] = UNTERBELEGT if n < n_min else SCORED
    return out


def _columns(cases: list, repeats: dict, width: int) -> tuple[list, list, list, tuple[int, int, int]]:
    """Unit means of every cell of one partition, as columns aligned with ``cases``.

    Column i < width - 1 is category i, the last one the total L. Also returns, per
    column, the within-unit sum of squares around the unit means and its degrees of
    freedom, and the partition's (planned, completed, aborted) executions.
    """
    rows = []
    ss, dof = [0.0] * width, [0] * width
    planned = completed = aborted = 0
    empty = [None] * width
    for cid in cases:
        reps = repeats[cid]
        if len(reps) == 1:  # the common case: one repeat, its losses are the unit means
            r = reps[0]
            planned += 1
            if r.state == COMPLETED:
                completed += 1
                rows.append(r.losses + [r.total])
            else:
                aborted += r.state == ABORTED
                rows.append(empty)
            continue
        planned += len(reps)
        done = [r.losses + [r.total] for r in reps if r.state == COMPLETED]
        completed += len(done)
        aborted += sum(1 for r in reps if r.state == ABORTED)
        row = [None] * width
        for i in range(width):
            vals = [d[i] for d in done if d[i] is not None]
            if len(vals) == 1:
                row[i] = vals[0]
            elif vals:
                m, s2 = squares_around_mean(vals)
                row[i] = m
                ss[i] += s2
                dof[i] += len(vals) - 1
        rows.append(row)
    columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(width)]
    return columns, ss, dof, (planned, completed, aborted)


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def _raters(catalog: Catalog, rated_repeats: list) -> dict:
    """Per model_judged category: repeats rated, double-rated, and the rater variance σ_r²."""
    out = {}
    for c in catalog.categories:
        if not c.model_judged:
            continue
        rated = double = 0
        variances = []
        for r in rated_repeats:
            ratings = r.ratings.get(c.index)
            if ratings is None:
                continue
            rated += 1
            if len(ratings) >= 2:
                double += 1
                variances.append(sample_variance(ratings))
        out[c.id] = {"rated": rated, "double_rated": double, "share": _rate(double, rated),
                     "rater_variance": snap(mean(variances)) if variances else None}
    return out


def score(results: dict, catalog: Catalog, plan: Plan, *, mode: str | None = None) -> Scored:
    """Score a loaded results.json; ``mode`` B re-scores without execution (baselines)."""
    # Scoring allocates many small, short-lived objects next to a large parsed results.json;
    # the cyclic collector would rescan all of it over and over for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _score(results, catalog, plan, mode=mode)
    finally:
        if enabled:
            gc.enable()


def _score(results: dict, catalog: Catalog, plan: Plan, *, mode: str | None = None) -> Scored:
    run = results.get("run") or {}
    mode = mode or run.get("mode") or "A"
    scorer = UnitScorer(catalog, mode)
    repeats: dict[str, list[RepeatLoss]] = {}
    parts = [PartitionData(p.key, dict(p.labels), p.weight, p.n_min, False) for p in plan.partitions]
    unassigned = PartitionData(UNASSIGNED, {}, 0.0, plan.default_n_min(), True)
    where: dict[tuple, PartitionData] = {}   # (labels items, provenance) -> partition
    provenances = set()
    score_unit = scorer.score
    rated = []
    # Units are taken in results order; every statistic below is order-independent (fsum).
    for entry in results["units"]:
        r = score_unit(entry)
        if r.ratings:
            rated.append(r)
        reps = repeats.get(r.case_id)
        if reps is not None:
            reps.append(r)
            continue
        repeats[r.case_id] = [r]
        sig = (tuple((entry.get("labels") or {}).items()), entry.get("provenance", "synthetic"))
        target = where.get(sig)
        if target is None:
            labels = unit_labels(dict(sig[0]), sig[1])
            target = next((d for d, p in zip(parts, plan.partitions) if p.contains(labels)), unassigned)
            where[sig] = target
            provenances.add(sig[1])
        target.cases.append(r.case_id)
    if unassigned.cases:
        parts.append(unassigned)

    raters = _raters(catalog, rated)
    warnings: list[str] = []
    rater_var = {}
    for c in catalog.categories:
        if not c.model_judged:
            continue
        info = raters[c.id]
        rater_var[c.index] = info["rater_variance"]
        if info["rated"] == 0:
            warnings.append(f"{c.id}: no unit has a judge rating or answer for this model_judged category; "
                            "it is unbewertbar in every partition")
        elif info["share"] < DOUBLE_RATED_SHARE:
            warnings.append(f"{c.id}: {info['double_rated']} of {info['rated']} rated repeats "
                            f"({info['share']:.0%}) are rated by two or more judges; at least 20 % are required, "
                            + ("so the rater variance is unknown and taken as 0 (se understated)"
                               if info["rater_variance"] is None else "so the rater variance is uncertain"))

    totals = {"planned": 0, "completed": 0, "aborted": 0}
    for d in parts:
        width = len(catalog.categories) + 1
        columns, ss, dof, (planned, completed, aborted) = _columns(d.cases, repeats, width)
        totals["planned"] += planned
        totals["completed"] += completed
        totals["aborted"] += aborted
        abort_rate = _rate(aborted, completed + aborted)
        suppressed = abort_rate is not None and abort_rate > ABORT_LIMIT
        by_category = {}
        for c in catalog.categories:
            d.columns[c.id] = columns[c.index]
            by_category[c.id] = _cell(columns[c.index], ss[c.index], dof[c.index], d.n_min, suppressed,
                                      rater_var.get(c.index), c.model_judged)
        d.columns[TOTAL] = columns[-1]
        overall = _cell(columns[-1], ss[-1], dof[-1], d.n_min, suppressed, None, False)
        message = None
        if suppressed:
            message = _abort_message(abort_rate)
            warnings.append(f"partition {d.key}: {message}")
        elif overall["status"] == UNBEWERTBAR:
            message = ("no completed unit" if not completed else "no category could be scored") + " in this partition"
        d.json = {
            "labels": d.labels, "partition": d.key, "weight": d.weight, "unassigned": d.unassigned,
            "n": overall["n"], "n_min": d.n_min, "loss": overall["loss"],
            "stddev_between": overall["stddev_between"], "se": overall["se"],
            "stddev_within": overall["stddev_within"], "coverage": _rate(completed, planned),
            "status": overall["status"], "abort_rate": abort_rate, "planned": planned, "completed": completed,
            "aborted": aborted, "message": message, "by_category": by_category,
        }
    if unassigned.cases:
        warnings.append(f"{len(unassigned.cases)} unit(s) match no partition of the plan and are reported as "
                        f"'{UNASSIGNED}' with weight 0: {', '.join(sorted(unassigned.cases)[:10])}"
                        f"{' …' if len(unassigned.cases) > 10 else ''}")
    if mode == "B":
        skipped = [c.id for c in catalog.categories if c.needs_execution]
        if skipped:
            warnings.append(f"mode B (no re-execution): {', '.join(skipped)} need execution and are unbewertbar")

    provenances = sorted(provenances)
    if provenances:
        provenance = provenances[0] if len(provenances) == 1 else "mixed"
    else:  # a run without units
        provenance = run.get("provenance") or "synthetic"
    planned, completed, aborted = totals["planned"], totals["completed"], totals["aborted"]
    suite_abort = _rate(aborted, completed + aborted)
    suite_scores = {}
    for prov in provenances:
        pairs = [(d.weight, d.json["loss"]) for d in parts
                 if d.labels.get("provenance") == prov and d.json["loss"] is not None and d.weight > 0]
        den = math.fsum(w for w, _ in pairs)
        suite_scores[prov] = math.fsum(w * x for w, x in pairs) / den if den > 0 else None
    if suite_abort is not None and suite_abort > ABORT_LIMIT:
        suite_status = SUPPRESSED
        suite_scores = {k: None for k in suite_scores}
        suite_score = None
        warnings.append(f"suite: {_abort_message(suite_abort)}")
    elif provenance == "mixed":
        suite_score = None
        suite_status = SCORED if any(v is not None for v in suite_scores.values()) else UNBEWERTBAR
        warnings.append("mixed run: synthetic and korpus units are aggregated separately; see suite_scores "
                        "(suite_score is null by design)")
    else:
        suite_score = suite_scores.get(provenance)
        suite_status = SCORED if suite_score is not None else UNBEWERTBAR

    plan_parts = [d for d in parts if not d.unassigned]
    w_all = math.fsum(d.weight for d in plan_parts)
    coverage = (math.fsum(d.weight for d in plan_parts if d.json["n"] >= d.n_min) / w_all) if w_all > 0 else None
    recorded_version = run.get("catalog_version")
    if recorded_version and recorded_version != catalog.version:
        warnings.append(f"the run recorded catalog {recorded_version}; it was re-scored with catalog {catalog.version}")

    suite = {
        "schema_version": SUITE_SCHEMA_VERSION,
        "kind": "obai-e2e-suite",
        "run_id": run.get("run_id"),
        "run_created_at": run.get("created_at"),
        "catalog_version": catalog.version,
        "catalog_sha256": catalog.sha256,
        "plan_sha256": plan.sha256,
        "mode": mode,
        "provenance": provenance,
        "mde": plan.mde,
        "suite_score": suite_score,
        "suite_scores": suite_scores,
        "suite_status": suite_status,
        "completion_rate": _rate(completed, planned),
        "coverage": coverage,
        "abort_rate": suite_abort,
        "sample_budget": plan.budget,
        "counts": {"planned": planned, "completed": completed, "aborted": aborted,
                   "not_judged": planned - completed - aborted, "units": len(repeats)},
        "raters": raters,
        "partitions": [d.json for d in parts],
        "warnings": warnings,
    }
    return Scored(suite=suite, partitions=parts, repeats=repeats, catalog=catalog, plan=plan, mode=mode)


def check_suite(suite: dict, source: str) -> None:
    """Validate against schemas/suite.v1.schema.json (a bare scalar or a missing table fails)."""
    schema.check(suite, SCHEMA, source=source)


def count_cells(suite: dict, status: str) -> int:
    return sum(1 for p in suite["partitions"] for c in p["by_category"].values() if c["status"] == status)
