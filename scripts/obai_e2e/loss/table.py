"""The loss table: results rows in, one row of losses per repeat and the unit means per case out.

The rows are read once, in order: each becomes one row of the table (its case, state and
losses) and is then dropped, so memory follows the number of units, not the size of the
file. A case's partition is assigned from its first row. The unit means are taken over
the table's columns; every sum is ``math.fsum``, so they do not depend on the order of
the rows.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

import numpy as np

from ..config.units import unit_key
from ..report.rows import ResultsRows
from .plan import Plan
from .sampling import unit_labels
from .stats import sample_variance
from .units import ABORTED, COMPLETED, OUTAGE, UnitScorer

STATE_CODE = {COMPLETED: 1, ABORTED: 2, OUTAGE: 3}


@dataclass
class LossTable:
    """One row per repeat: its case, state, unit id, ref (to read the unit again) and losses.

    ``losses`` has one column per category and a last one for the total L; NaN where the
    repeat did not score it (unbewertbar, or not completed).
    """

    unit_ids: list
    refs: np.ndarray
    case_of: np.ndarray
    state: np.ndarray
    losses: np.ndarray
    cases: list                     # case ids in order of first appearance
    case_part: np.ndarray           # partition index per case
    rated: list                     # per category: repeats with a rating (model_judged only)
    double_rated: list
    rater_variances: list           # per category: sample variance of each double-rated repeat's ratings
    provenances: set


def read_table(rows: ResultsRows, scorer: UnitScorer, plan: Plan) -> LossTable:
    """Score every row into the loss table; partitions are assigned per case from its first row."""
    width = scorer.n + 1
    nan = math.nan
    empty = [nan] * width
    flat, refs, case_of, state = array("d"), array("q"), array("l"), array("b")
    unit_ids: list[str] = []
    cases: list[str] = []
    case_index: dict[str, int] = {}
    case_part: list[int] = []
    where: dict[tuple, int] = {}
    provenances: set[str] = set()
    unassigned = len(plan.partitions)
    rated = [0] * scorer.n
    double = [0] * scorer.n
    variances: list[list] = [[] for _ in range(scorer.n)]
    losses_of = scorer.losses_of
    for ref, entry in rows:
        try:
            st, losses, total, ratings = losses_of(entry)
            cid = unit_key(entry["case_id"], entry.get("channel"))
            ci = case_index.get(cid)
            if ci is None:
                sig = (tuple((entry.get("labels") or {}).items()), entry.get("provenance", "synthetic"),
                       entry.get("channel"), entry.get("kind"))
                pi = where.get(sig)
                if pi is None:
                    labels = unit_labels(dict(sig[0]), sig[1], sig[2], sig[3])
                    pi = next((i for i, p in enumerate(plan.partitions) if p.contains(labels)), unassigned)
                    where[sig] = pi
                    provenances.add(sig[1])
                ci = case_index[cid] = len(cases)
                cases.append(cid)
                case_part.append(pi)
            unit_ids.append(entry["unit_id"])
        except (KeyError, TypeError, AttributeError, ValueError):
            raise rows.explain(ref, entry) from None
        refs.append(ref)
        case_of.append(ci)
        if st == COMPLETED:
            state.append(1)
            flat.extend([nan if x is None else x for x in losses])
            flat.append(nan if total is None else total)
        else:
            state.append(STATE_CODE.get(st, 0))
            flat.extend(empty)
        if ratings:
            for i, rs in ratings.items():
                rated[i] += 1
                if len(rs) >= 2:
                    double[i] += 1
                    variances[i].append(sample_variance(rs))
    matrix = np.frombuffer(flat, dtype=np.float64).reshape(-1, width) if len(flat) else np.empty((0, width))
    return LossTable(unit_ids=unit_ids, refs=np.frombuffer(refs, dtype=np.int64) if len(refs) else np.empty(0, np.int64),
                     case_of=np.asarray(case_of, dtype=np.int64), state=np.asarray(state, dtype=np.int8),
                     losses=matrix, cases=cases, case_part=np.asarray(case_part, dtype=np.int64),
                     rated=rated, double_rated=double, rater_variances=variances, provenances=provenances)


def unit_means(table: LossTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case and column: the unit mean m_u (NaN when none), Σ_r (x_ur − m_u)² and its degrees of freedom."""
    n_cases, width = len(table.cases), table.losses.shape[1]
    means = np.full((n_cases, width), np.nan)
    squares = np.zeros((n_cases, width))
    dof = np.zeros((n_cases, width), dtype=np.int64)
    if not n_cases:
        return means, squares, dof
    repeats = np.bincount(table.case_of, minlength=n_cases)
    single = repeats[table.case_of] == 1
    means[table.case_of[single]] = table.losses[single]      # one repeat: its losses are the unit means
    multi = np.nonzero(~single)[0]
    if len(multi):
        order = multi[np.argsort(table.case_of[multi], kind="stable")]
        groups = np.split(order, np.nonzero(np.diff(table.case_of[order]))[0] + 1)
        fsum = math.fsum
        for rows in groups:
            ci = table.case_of[rows[0]]
            for j, column in enumerate(table.losses[rows].T.tolist()):
                vals = [x for x in column if x == x]
                if len(vals) == 1:
                    means[ci, j] = vals[0]
                elif vals:
                    m = fsum(vals) / len(vals)
                    means[ci, j] = m
                    squares[ci, j] = fsum([(x - m) * (x - m) for x in vals])
                    dof[ci, j] = len(vals) - 1
    return means, squares, dof
