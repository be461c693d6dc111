"""Pilot estimates of the between-unit spread s per partition, from R finished runs of the same cases.

For one partition and one category, each run r gives unit means m_ur (one per case);
their spread around that run's own mean, pooled over the runs, is

    s_b² = Σ_r Σ_u (m_ur − m̄_r)² / Σ_r (n_r − 1)

(deviations are taken within a run, so a shift between runs does not count as spread).
A model_judged category adds the rater variance, pooled over the runs' double-rated
repeats, as the loss layer's se does: s_c = √(s_b² + σ_r²). The partition's s pools the
categories as the plan says (``pilot.pool``):

* ``max`` (default): the largest s_c, so every category's cell gets the power n_min promises;
* ``rms``: √(mean of the s_c²), the typical category.

Categories without two units in any run are left out, and so is a run whose partition is
suppressed (abort rate above 10 %); a partition without any such category gets no
estimate and keeps its s. The written estimate is rounded up to three
decimals, so n_min never comes out smaller than the estimate gives.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import yaml

from ..base.clock import utc_now
from ..base.errors import UsageError
from ..base.fsutil import atomic_write_text
from ..report.rows import open_results
from .catalog import Catalog
from .cells import SUPPRESSED
from .plan import decimal_text, exact, labels_key, load_plan, parse_plan, write_plan_md
from .score import Scored, score

POOLS = ("max", "rms")
DECIMALS = 3


@dataclass
class PartitionEstimate:
    """The pilot's figures for one partition."""

    partition: str
    s: Fraction | None                  # rounded up to DECIMALS; None: no estimate
    s_raw: float | None
    by_category: dict = field(default_factory=dict)   # category id -> s_c
    units: int = 0                      # unit means used, over all runs (the largest category)
    dof: int = 0

    def to_json(self) -> dict:
        return {"partition": self.partition, "s": None if self.s is None else float(self.s), "s_raw": self.s_raw,
                "by_category": self.by_category, "units": self.units, "dof": self.dof}


def round_up(value: float, decimals: int = DECIMALS) -> Fraction:
    """The smallest decimal with ``decimals`` places that is ≥ ``value``, on the value's decimal text
    (0.1 stays 0.100; its binary double is a hair above 1/10)."""
    scale = 10 ** decimals
    return Fraction(math.ceil(exact(value) * scale), scale)


def _pooled_rater_variance(runs: list[Scored], category: str) -> float:
    num, den = [], 0
    for run in runs:
        info = run.suite["raters"].get(category) or {}
        if info.get("rater_variance") is not None and info.get("double_rated"):
            num.append(info["rater_variance"] * info["double_rated"])
            den += info["double_rated"]
    return math.fsum(num) / den if den else 0.0


def estimate(runs: list[Scored], pool: str = "max") -> list[PartitionEstimate]:
    """One estimate per declared partition of the plan the runs were scored with."""
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {POOLS}")
    if not runs:
        return []
    catalog = runs[0].catalog
    rater = {c.id: _pooled_rater_variance(runs, c.id) for c in catalog.categories if c.model_judged}
    out = []
    for part in runs[0].partitions:
        if part.unassigned:
            continue
        by_category, units, dofs = {}, 0, 0
        for c in catalog.categories:
            squares, dof, n_all = [], 0, 0
            for run in runs:
                p = run.partition(part.key)
                col = p.columns.get(c.id) if p is not None else None
                if col is None or p.json["status"] == SUPPRESSED:   # a harness failure says nothing about s
                    continue
                x = col[~np.isnan(col)]
                n_all += len(x)
                if len(x) >= 2:
                    m = math.fsum(x.tolist()) / len(x)
                    d = x - m
                    squares.append(math.fsum((d * d).tolist()))
                    dof += len(x) - 1
            if dof:
                var = math.fsum(squares) / dof + rater.get(c.id, 0.0)
                by_category[c.id] = math.sqrt(var)
                units, dofs = max(units, n_all), max(dofs, dof)
        if not by_category:
            out.append(PartitionEstimate(part.key, None, None))
            continue
        values = list(by_category.values())
        raw = max(values) if pool == "max" else math.sqrt(math.fsum(v * v for v in values) / len(values))
        out.append(PartitionEstimate(part.key, min(round_up(raw), Fraction(1)), raw, by_category, units, dofs))
    return out


# ------------------------------------------------------------------------------ writing the plan

def _s_text(value: Fraction) -> str:
    return f"{float(value):.{DECIMALS}f}"


def _block_edit(text: str, mapping: yaml.MappingNode, key: str, value: str) -> tuple[int, int, str]:
    """The edit (start, end, replacement) that sets ``key: value`` in a block or flow mapping."""
    for k, v in mapping.value:
        if k.value == key:
            return v.start_mark.index, v.end_mark.index, value
    if mapping.flow_style:
        end = mapping.end_mark.index - 1          # before the closing brace
        return end, end, f", {key}: {value}"
    last = mapping.value[-1][1]
    indent = " " * mapping.value[0][0].start_mark.column
    end = last.end_mark.index
    # a block value ends at the start of the next line; insert before that newline
    while end > 0 and text[end - 1] in "\n ":
        end -= 1
    return end, end, f"\n{indent}{key}: {value}"


def _pilot_block(meta: dict) -> str:
    runs = ", ".join(json.dumps(r) for r in meta["runs"])
    return ("pilot:\n"
            f"  date: {json.dumps(meta['date'])}\n"
            f"  repeats: {meta['repeats']}\n"
            f"  pool: {meta['pool']}\n"
            f"  runs: [{runs}]\n")


def with_pilot(text: str, estimates: list[PartitionEstimate], meta: dict) -> str:
    """The plan text with each estimated partition's ``s`` set and the ``pilot`` provenance block
    (runs, date, repeats, pool) written; comments and the rest of the file stay as they are."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise ValueError("the plan is not a mapping")
    top = {k.value: (k, v) for k, v in root.value}
    by_key = {e.partition: e for e in estimates if e.s is not None}
    edits = []
    parts = top.get("partitions", (None, None))[1]
    for node in parts.value if isinstance(parts, yaml.SequenceNode) else ():
        if not isinstance(node, yaml.MappingNode):
            continue
        fields = {k.value: v for k, v in node.value}
        labels_node = fields.get("labels")
        labels = yaml.safe_load(yaml.serialize(labels_node)) if labels_node is not None else {}
        labels = dict(labels or {})
        labels.setdefault("provenance", "synthetic")
        est = by_key.get(labels_key(labels))
        if est is not None:
            edits.append(_block_edit(text, node, "s", _s_text(est.s)))
    block = _pilot_block(meta)
    if "pilot" in top:
        k, v = top["pilot"]
        start, end = k.start_mark.index, v.end_mark.index
        while end < len(text) and text[end - 1] != "\n":
            end += 1
        edits.append((start, end, block))
    else:
        anchor = top.get("hops", top.get("partitions"))[0]
        start = anchor.start_mark.index - anchor.start_mark.column
        edits.append((start, start, block + "\n"))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


# ------------------------------------------------------------------------------ one pilot, end to end

def pilot_from_runs(run_dirs: list[Path], catalog: Catalog, plan_path: Path | None = None, *,
                    write: bool = True, plan_md: Path | None = None) -> dict:
    """Estimate s per partition from finished runs, write it into the plan and re-render E2E-PLAN.md.

    Each run is scored with the plan as it is now (its own mode). The plan file is rewritten
    atomically and only when the rewritten text parses to a valid plan with the new values.
    """
    if len(run_dirs) < 1:
        raise UsageError("a pilot needs at least one finished run")
    plan = load_plan(plan_path)
    scored, ids, cases = [], [], []
    for d in run_dirs:
        rows = open_results(Path(d) / "results.json")
        s = score(rows, catalog, plan)
        scored.append(s)
        ids.append(s.suite["run_id"] or str(d))
        cases.append(frozenset(s.table.cases))
    warnings = []
    if len(set(cases)) > 1:
        warnings.append("the runs did not all drive the same cases; the spread is pooled within each run all the same")
    estimates = estimate(scored, pool=plan.pool)
    meta = {"date": utc_now().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "repeats": len(run_dirs), "pool": plan.pool, "runs": ids}
    text = plan.path.read_text(encoding="utf-8")
    new_text = with_pilot(text, estimates, meta)
    data = yaml.safe_load(new_text)
    new_plan = parse_plan(data, {}, new_text, str(plan.path), plan.path)
    md_path = None
    if write:
        atomic_write_text(plan.path, new_text)
        md_path = write_plan_md(new_plan, plan_md)
    default_n = plan.default_n_min()
    before = {p.key: p for p in plan.partitions}
    partitions = []
    for e, p in zip(estimates, new_plan.partitions):
        old = before[p.key]
        if e.s is None:
            warnings.append(f"partition {p.key}: fewer than two units in every run; s stays {decimal_text(p.s)}")
        partitions.append({"partition": p.key, "s": float(p.s), "s_raw": e.s_raw, "s_before": float(old.s),
                           "estimated": e.s is not None, "by_category": e.by_category, "units": e.units,
                           "n_min": p.n_min, "n_min_before": old.n_min, "n_min_at_default_s": default_n})
    return {"status": "piloted" if write else "estimated", "plan": str(plan.path),
            "e2e_plan": str(md_path) if md_path else None, "pilot": meta, "sample_budget": new_plan.budget,
            "sample_budget_before": plan.budget, "partitions": partitions, "warnings": warnings}
