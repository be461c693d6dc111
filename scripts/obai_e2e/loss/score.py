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
    """suite.json from a loss table (``read_table``) of ``rows``: partitions scored, then the suite."""
    run = rows.run
    parts, unassigned, all_parts = _partitions(table, plan)
    raters, rater_var, warnings = _raters(catalog, table)
    totals = _score_partitions(table, catalog, all_parts, unassigned, rater_var, warnings)
    _run_warnings(table, catalog, unassigned, totals, mode, warnings)
    detection = detection_of(parts, plan.mde)
    provenances = sorted(table.provenances)
    if provenances:
        provenance = provenances[0] if len(provenances) == 1 else "mixed"
    else:  # a run without units
        provenance = run.get("provenance") or "synthetic"
    suite_scores, caps = _suite_scores(parts, provenances, plan, catalog, warnings)
    suite_score, suite_scores, suite_status, suite_abort = _suite_status(totals, provenance, suite_scores, warnings)
    recorded_version = run.get("catalog_version")
    if recorded_version and recorded_version != catalog.version:
        warnings.append(f"the run recorded catalog {recorded_version}; it was re-scored with catalog {catalog.version}")
    planned, completed, aborted = totals["planned"], totals["completed"], totals["aborted"]
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
        "coverage": _coverage(parts),
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


def _partitions(table: LossTable, plan: Plan) -> tuple[list, PartitionData, list]:
    """(the partitions reported, the unassigned one, every partition in table order) with their cases."""
    parts = [PartitionData(p.key, dict(p.labels), p.weight, p.n_min, False) for p in plan.partitions]
    unassigned = PartitionData(UNASSIGNED, {}, 0.0, plan.default_n_min(), True)
    all_parts = parts + [unassigned]
    for pi, d in enumerate(all_parts):
        d.index = np.nonzero(table.case_part == pi)[0]
        d.cases = [table.cases[i] for i in d.index.tolist()]
    if unassigned.cases:
        parts.append(unassigned)
    return parts, unassigned, all_parts


def _raters(catalog: Catalog, table: LossTable) -> tuple[dict, dict, list[str]]:
    """(raters per model-judged category, their rater variance by column, warnings about too few ratings)."""
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
    return raters, rater_var, warnings


def _score_partitions(table: LossTable, catalog: Catalog, all_parts: list, unassigned: PartitionData,
                      rater_var: dict, warnings: list[str]) -> dict:
    """Each partition's cells and suite.json entry (``d.json``); the run's unit counts (planned, completed, …)."""
    n_parts = len(all_parts)
    rep_part = table.case_part[table.case_of] if len(table.case_of) else np.empty(0, np.int64)
    by_state = {k: np.bincount(rep_part[table.state == s] if s else rep_part, minlength=n_parts)
                for k, s in (("planned", None), ("completed", 1), ("aborted", 2), ("outage", 3))}
    means, squares, dof = unit_means(table)
    totals = {"planned": 0, "completed": 0, "aborted": 0, "outage": 0}
    for pi, d in enumerate(all_parts):
        if d is unassigned and not d.cases:
            continue
        counts = {k: int(v[pi]) for k, v in by_state.items()}
        for k, v in counts.items():
            totals[k] += v
        abort_rate = rate(counts["aborted"], counts["completed"] + counts["aborted"])
        suppressed = abort_rate is not None and abort_rate > ABORT_LIMIT
        block, sq, df = means[d.index], squares[d.index], dof[d.index]
        width = len(catalog.categories) + 1
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
        d.json = _partition_json(d, cells[-1], counts, abort_rate, suppressed, by_category, warnings)
    return totals


def _partition_json(d: PartitionData, overall: dict, counts: dict, abort_rate, suppressed: bool,
                    by_category: dict, warnings: list[str]) -> dict:
    completed, outage = counts["completed"], counts["outage"]
    message = None
    if suppressed:
        message = _abort_message(abort_rate)
        warnings.append(f"partition {d.key}: {message}")
    elif overall["status"] == UNBEWERTBAR:
        message = ("no completed unit" if not completed else "no category could be scored") + " in this partition"
        if outage and not completed:
            message = f"every unit hit an upstream outage of the ui channel ({outage}): not assessable, never loss"
    return {
        "labels": d.labels, "partition": d.key, "weight": d.weight, "unassigned": d.unassigned,
        "n": overall["n"], "n_min": d.n_min, "loss": overall["loss"],
        "stddev_between": overall["stddev_between"], "se": overall["se"],
        "stddev_within": overall["stddev_within"], "coverage": rate(completed, counts["planned"]),
        "status": overall["status"], "abort_rate": abort_rate, "planned": counts["planned"], "completed": completed,
        "aborted": counts["aborted"], "outage": outage, "message": message, "by_category": by_category,
    }


def _run_warnings(table: LossTable, catalog: Catalog, unassigned: PartitionData, totals: dict, mode: str,
                  warnings: list[str]) -> None:
    """What the whole run's reader must know: unassigned units, ui outages, categories mode B cannot score."""
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


def _suite_scores(parts: list, provenances: list[str], plan: Plan, catalog: Catalog,
                  warnings: list[str]) -> tuple[dict, dict]:
    """The suite score per provenance (partitions weighted under the adversarial cap), and each cap's record."""
    suite_scores, caps = {}, {}
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
    return suite_scores, caps


def _suite_status(totals: dict, provenance: str, suite_scores: dict, warnings: list[str]):
    """(suite score, scores per provenance, status, abort rate): withheld over the abort limit, null for a mixed run."""
    suite_abort = rate(totals["aborted"], totals["completed"] + totals["aborted"])
    if suite_abort is not None and suite_abort > ABORT_LIMIT:
        warnings.append(f"suite: {_abort_message(suite_abort)}")
        return None, {k: None for k in suite_scores}, SUPPRESSED, suite_abort
    if provenance == "mixed":
        warnings.append("mixed run: synthetic and korpus units are aggregated separately; see suite_scores "
                        "(suite_score is null by design)")
        status = SCORED if any(v is not None for v in suite_scores.values()) else UNBEWERTBAR
        return None, suite_scores, status, suite_abort
    suite_score = suite_scores.get(provenance)
    return suite_score, suite_scores, SCORED if suite_score is not None else UNBEWERTBAR, suite_abort


def _coverage(parts: list) -> float | None:
    """The share of the plan's weight in partitions with at least n_min units (None: the plan has no weight)."""
    plan_parts = [d for d in parts if not d.unassigned]
    w_all = math.fsum(d.weight for d in plan_parts)
    return (math.fsum(d.weight for d in plan_parts if d.json["n"] >= d.n_min) / w_all) if w_all > 0 else None


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

