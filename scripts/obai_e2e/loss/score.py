"""suite.json: per partition and per partition × category, the loss and its spreads.

A run's results (rows, or a document in memory), the catalog and the plan go in; a
``Scored`` comes out: the suite.json document plus what comparison and citations need.
A unit is one case in one run; its repeats are the results.json entries with that case
id. The rows become a loss table (``table.py``), each cell's statistics come from its
unit means (``cells.py``), and the partitions' losses are weighted into the suite score
under the adversarial cap. See references/loss-layer.md for the status rules.
"""
from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..base import schema
from ..report.rows import ResultsRows, from_data
from .catalog import Catalog
from .cells import (
    SCORED,
    SUPPRESSED,
    UNBEWERTBAR,
    cell_stats,
    detection_of,
    rate,
    raters_of,
)
from .plan import Plan
from .table import LossTable, read_table, unit_means
from .units import UnitScorer

SCHEMA = "suite.v1.schema.json"
SUITE_SCHEMA_VERSION = 1
ABORT_LIMIT = 0.10
DOUBLE_RATED_SHARE = 0.20
UNASSIGNED = "unassigned"
TOTAL = None  # the cell index of the unit total L


@dataclass
class PartitionData:
    """One partition of a scored run: its cases and the unit means of every cell."""

    key: str
    labels: dict
    weight: float
    n_min: int
    unassigned: bool
    cases: list = field(default_factory=list)           # case ids, in results order
    index: np.ndarray | None = None                     # their rows in the run's unit-mean table
    columns: dict = field(default_factory=dict)         # category id (None = total) -> unit means (NaN = none)
    json: dict = field(default_factory=dict)

    def unit_means(self, category: str | None) -> dict:
        """{case id: m_u} of one cell (category None: the unit total L)."""
        col = self.columns.get(category)
        if col is None:
            return {}
        return {cid: m for cid, m in zip(self.cases, col.tolist()) if m == m}


@dataclass
class Scored:
    """A scored run: suite.json plus what comparison and citations need."""

    suite: dict
    partitions: list
    table: LossTable
    rows: ResultsRows
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

def score(results, catalog: Catalog, plan: Plan, *, mode: str | None = None) -> Scored:
    """Score a run's results (ResultsRows, or a results document in memory); ``mode`` B re-scores without
    execution (baselines)."""
    rows = results if isinstance(results, ResultsRows) else from_data(results)
    # Scoring allocates many small, short-lived objects; the cyclic collector would rescan
    # them over and over for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _score(rows, catalog, plan, mode=mode)
    finally:
        if enabled:
            gc.enable()


def _score(rows: ResultsRows, catalog: Catalog, plan: Plan, *, mode: str | None = None) -> Scored:
    mode = mode or rows.run.get("mode") or "A"
    return score_table(read_table(rows, UnitScorer(catalog, mode), plan), rows, catalog, plan, mode)


def score_table(table: LossTable, rows: ResultsRows, catalog: Catalog, plan: Plan, mode: str) -> Scored:
    """suite.json from a loss table (``read_table``) of ``rows``."""
    run = rows.run
    means, squares, dof = unit_means(table)

    parts = [PartitionData(p.key, dict(p.labels), p.weight, p.n_min, False) for p in plan.partitions]
    unassigned = PartitionData(UNASSIGNED, {}, 0.0, plan.default_n_min(), True)
    all_parts = parts + [unassigned]
    n_parts = len(all_parts)
    for pi, d in enumerate(all_parts):
        d.index = np.nonzero(table.case_part == pi)[0]
        d.cases = [table.cases[i] for i in d.index.tolist()]
    if unassigned.cases:
        parts.append(unassigned)

    rep_part = table.case_part[table.case_of] if len(table.case_of) else np.empty(0, np.int64)
    planned_by = np.bincount(rep_part, minlength=n_parts)
    completed_by = np.bincount(rep_part[table.state == 1], minlength=n_parts)
    aborted_by = np.bincount(rep_part[table.state == 2], minlength=n_parts)
    outage_by = np.bincount(rep_part[table.state == 3], minlength=n_parts)

    raters = raters_of(catalog, table)
    warnings: list[str] = []
    rater_var = {}
    for c in catalog.categories:
        if not c.model_judged:
            continue
        info = raters[c.id]
        rater_var[c.index] = info["rater_variance"]
        if info["rated"] == 0:
            warnings.append(f"{c.id}: no model-judged answers to cover: no judge rated or answered this "
                            "model_judged category in this run, so it is not assessable in any partition (no loss, "
                            "no coverage figure)")
        elif info["share"] < DOUBLE_RATED_SHARE:
            warnings.append(f"{c.id}: {info['double_rated']} of {info['rated']} rated repeats "
                            f"({info['share']:.0%}) are rated by two or more judges; at least 20 % are required, "
                            + ("so the rater variance is unknown and taken as 0 (se understated)"
                               if info["rater_variance"] is None else "so the rater variance is uncertain"))

    width = len(catalog.categories) + 1
    totals = {"planned": 0, "completed": 0, "aborted": 0, "outage": 0}
    for pi, d in enumerate(all_parts):
        if d is unassigned and not d.cases:
            continue
        planned, completed, aborted = int(planned_by[pi]), int(completed_by[pi]), int(aborted_by[pi])
        outage = int(outage_by[pi])
        totals["planned"] += planned
        totals["completed"] += completed
        totals["aborted"] += aborted
        totals["outage"] += outage
        abort_rate = rate(aborted, completed + aborted)
        suppressed = abort_rate is not None and abort_rate > ABORT_LIMIT
        block, sq, df = means[d.index], squares[d.index], dof[d.index]
        cells = []
        for j in range(width):
            col = block[:, j]
            present = col[~np.isnan(col)]
            judged = j < width - 1 and catalog.categories[j].model_judged
            cells.append(cell_stats(present, math.fsum(sq[:, j].tolist()), int(df[:, j].sum()), d.n_min,
                                    suppressed, rater_var.get(j), judged))
        by_category = {}
        for c in catalog.categories:
            d.columns[c.id] = block[:, c.index]
            by_category[c.id] = cells[c.index]
        d.columns[TOTAL] = block[:, -1]
        overall = cells[-1]
        message = None
        if suppressed:
            message = _abort_message(abort_rate)
            warnings.append(f"partition {d.key}: {message}")
        elif overall["status"] == UNBEWERTBAR:
            message = ("no completed unit" if not completed else "no category could be scored") + " in this partition"
            if outage and not completed:
                message = f"every unit hit an upstream outage of the ui channel ({outage}): not assessable, never loss"
        d.json = {
            "labels": d.labels, "partition": d.key, "weight": d.weight, "unassigned": d.unassigned,
            "n": overall["n"], "n_min": d.n_min, "loss": overall["loss"],
            "stddev_between": overall["stddev_between"], "se": overall["se"],
            "stddev_within": overall["stddev_within"], "coverage": rate(completed, planned),
            "status": overall["status"], "abort_rate": abort_rate, "planned": planned, "completed": completed,
            "aborted": aborted, "outage": outage, "message": message, "by_category": by_category,
        }
    if unassigned.cases:
        warnings.append(f"{len(unassigned.cases)} unit(s) match no partition of the plan and are reported as "
                        f"'{UNASSIGNED}' with weight 0: {', '.join(sorted(unassigned.cases)[:10])}"
                        f"{' …' if len(unassigned.cases) > 10 else ''}")
    if totals["outage"]:
        hit = sorted({table.unit_ids[i] for i in np.nonzero(table.state == 3)[0].tolist()})
        warnings.append(f"{totals['outage']} execution(s) hit an upstream outage of the ui channel (the UI or its "
                        f"backend was down): {', '.join(hit[:10])}{' …' if len(hit) > 10 else ''}; their categories "
                        "are not assessable, never loss, and they are not aborts")
    if mode == "B":
        skipped = [c.id for c in catalog.categories if c.needs_execution]
        if skipped:
            warnings.append(f"mode B (no re-execution): {', '.join(skipped)} need execution and are not assessable")
    detection = detection_of(parts, plan.mde)

    provenances = sorted(table.provenances)
    if provenances:
        provenance = provenances[0] if len(provenances) == 1 else "mixed"
    else:  # a run without units
        provenance = run.get("provenance") or "synthetic"
    planned, completed, aborted = totals["planned"], totals["completed"], totals["aborted"]
    suite_abort = rate(aborted, completed + aborted)
    suite_scores = {}
    caps = {}
    weight_of = {p.key: (p.weight_exact, p.adversarial) for p in plan.partitions}
    for prov in provenances:
        scored = [d for d in parts
                  if d.labels.get("provenance") == prov and d.json["loss"] is not None and d.weight > 0]
        effective, caps[prov] = capped_weights([(d.key, *weight_of[d.key]) for d in scored],
                                               catalog.cap_adversarial)
        for d in scored:
            d.json["effective_weight"] = float(effective[d.key])
        den = math.fsum(float(effective[d.key]) for d in scored)
        suite_scores[prov] = (math.fsum(float(effective[d.key]) * d.json["loss"] for d in scored) / den
                              if den > 0 else None)
        if caps[prov]["applied"] is False and caps[prov]["reason"]:
            warnings.append(f"{prov}: {caps[prov]['reason']}")
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
        "completion_rate": rate(completed, planned),
        "coverage": coverage,
        "abort_rate": suite_abort,
        "sample_budget": plan.budget,
        "counts": {"planned": planned, "completed": completed, "aborted": aborted, "outage": totals["outage"],
                   "not_judged": planned - completed - aborted - totals["outage"], "units": len(table.cases)},
        "cap": {"adversarial": None if catalog.cap_adversarial is None else float(catalog.cap_adversarial),
                "by_provenance": caps},
        "raters": raters,
        "detection": detection,
        "partitions": [d.json for d in parts],
        "warnings": warnings,
    }
    return Scored(suite=suite, partitions=parts, table=table, rows=rows, catalog=catalog, plan=plan, mode=mode)


def capped_weights(parts: list[tuple[str, Fraction, bool]], cap: Fraction | None) -> tuple[dict, dict]:
    """Effective weights of (key, weight, adversarial) partitions under the adversarial cap.

    With W_a the adversarial and W_e the everyday weight, the adversarial share is
    W_a / (W_a + W_e). Above the cap c every adversarial weight is multiplied by
    f = c·W_e / ((1 − c)·W_a), which makes the share exactly c; at or below it nothing
    changes. Computed on fractions, so the cap holds exactly.
    """
    w_a = sum((w for _, w, adv in parts if adv), Fraction(0))
    w_e = sum((w for _, w, adv in parts if not adv), Fraction(0))
    total = w_a + w_e
    share = w_a / total if total else Fraction(0)
    info = {"share_before": float(share), "share_after": float(share), "factor": 1.0, "applied": False,
            "reason": None}
    factor = Fraction(1)
    if cap is not None and w_a > 0 and share > cap:
        if w_e == 0:
            info["reason"] = ("only adversarial partitions have a loss, so the adversarial cap cannot hold: the suite "
                              "score is theirs alone")
        else:
            factor = cap * w_e / ((1 - cap) * w_a)
            info.update(factor=float(factor), applied=True, share_after=float(cap))
    effective = {key: (w * factor if adv else w) for key, w, adv in parts}
    return effective, info


def check_suite(suite: dict, source: str) -> None:
    """Validate against schemas/suite.v1.schema.json (a bare scalar or a missing table fails)."""
    schema.check(suite, SCHEMA, source=source)

