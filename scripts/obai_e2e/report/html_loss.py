"""The Loss section of report.html: suite figures, the partition table, what each cell can detect.

Enters: suite.json, the rows of TOP-REGRESSIONS.md and what comparison.json says (html_inputs).
Leaves: the section's view. Statuses are shown by their English labels (base/labels.py); a
cell's detectable effect is shown once, on its own line (against the baseline when the run
was compared with one, else against a like-for-like run), and the categories nothing could
assess are named together on one line instead of one line each.
"""
from __future__ import annotations

from typing import Any

from ..base.labels import STATUS_LABELS, status_label


def fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _pct(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    return f"{100 * value:.1f} %"


def category_lines(by_cat: Any, effects: dict | None = None, shared: tuple | None = None) -> list[str]:
    """One line per category that has something to show, then one line naming the categories nothing
    could assess: ``routing: loss 0.75 · detects ≥ 0.6050``, ``guard: loss 0 · under-populated, needs 3 more``.

    ``shared``: the partition's own (status, units it lacks); a category in the same state says only its loss.
    """
    if not isinstance(by_cat, dict):
        return [fmt(by_cat)]
    lines, unassessed = [], []
    for name in sorted(by_cat):
        cell = by_cat[name]
        if not isinstance(cell, dict):
            lines.append(f"{name}: {fmt(cell)}")
            continue
        status = cell.get("status")
        if status == "unbewertbar":
            unassessed.append(str(name))
            continue
        text = f"{name}: loss {fmt(cell.get('loss'))}"
        if shared is not None and (status, cell.get("needs_units")) == shared:
            lines.append(text)
            continue
        if status not in (None, "scored"):
            text += f" · {status_label(status)}"
        effect = (effects or {}).get(name, cell.get("detectable_effect"))
        if isinstance(effect, (int, float)) and not isinstance(effect, bool):
            text += f" · detects ≥ {effect:.4f}"
        elif isinstance(cell.get("needs_units"), int) and cell["needs_units"] > 0:
            text += f", needs {cell['needs_units']} more"
        lines.append(text)
    if unassessed:
        lines.append(f"not assessable: {', '.join(unassessed)}")
    return lines


def in_english(text: str) -> str:
    """A message of an older run with the status values spelt as people read them."""
    for status, label in STATUS_LABELS.items():
        text = text.replace(status, label) if status != label else text
    return text


def _score_text(suite: dict) -> tuple[str, bool]:
    """(the suite score as the page shows it, whether that is an alarm). Only a withheld score is one: a run
    with nothing the loss layer could score (no completed unit in a scored category, e.g. no model-judged
    answer) has a score that does not apply, which is no fault of the run."""
    score, status = suite.get("suite_score"), suite.get("suite_status")
    if score is not None:
        return fmt(score), False
    if status == "suppressed":
        return "not reported (suppressed): too many units ended inconclusive", True
    if status == "unbewertbar":
        return "not applicable: no unit of this run falls in a category the loss layer could score", False
    if suite.get("provenance") == "mixed":
        return "per provenance (a mixed run: see suite_scores)", False
    return f"not reported{f' ({status_label(status)})' if status else ''}", True


def _coverage_text(suite: dict) -> str:
    """Coverage: the share of the plan's weight in partitions with at least n_min units, said as such."""
    coverage = suite.get("coverage")
    if "coverage" not in suite:
        return ""
    if not isinstance(coverage, (int, float)) or isinstance(coverage, bool):
        return "nothing to cover (the plan has no weighted partition)"
    text = f"{_pct(coverage)} of the plan's weight in partitions with n ≥ n_min"
    if coverage == 0:
        text += " (none has n_min units yet: a run this size is indicative, not a measurement of the suite)"
    return text


def _suite(suite: dict) -> dict:
    status = suite.get("suite_status")
    score, alarm = _score_text(suite)
    return {
        "score": score,
        "score_missing": alarm,
        "status": status_label(status) if status else "",
        "completion": _pct(suite.get("completion_rate")),
        "coverage": _coverage_text(suite),
        "catalog_version": fmt(suite.get("catalog_version")),
        "mode": fmt(suite.get("mode")),
        "provenance": fmt(suite.get("provenance")),
        "mde": fmt(suite.get("mde")),
        "warnings": [in_english(str(w)) for w in suite.get("warnings") or [] if w],
    }


def loss_view(suite: dict | None, regressions: list[dict] | None, comparison: dict | None = None) -> dict | None:
    if suite is None and regressions is None:
        return None
    view: dict[str, Any] = {"error": None, "suite": None, "partitions": [], "regressions": regressions,
                            "comparison": comparison, "detects_against": "a like-for-like run"}
    if suite is not None and suite.get("_error"):
        view["error"] = suite["_error"]
        return view
    if suite is None:
        return view
    view["suite"] = _suite(suite)
    effects = (comparison or {}).get("effects") or {}
    if comparison is not None:
        view["detects_against"] = f"the baseline ({comparison.get('baseline') or '—'})"
    for p in suite.get("partitions") or []:
        if not isinstance(p, dict):
            continue
        labels = p.get("labels") or {}
        name = p.get("partition") or (", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
                                      if isinstance(labels, dict) else str(labels))
        thin = p.get("status") == "unterbelegt"
        needs = p.get("needs_units") if thin and isinstance(p.get("needs_units"), int) else None
        view["partitions"].append({
            "labels": name,
            "label_parts": name.split(",") if isinstance(name, str) else [str(name)],
            "needs": f"needs {needs} more unit{'s' if needs != 1 else ''}" if needs else "",
            "weight": fmt(p.get("weight")), "n": fmt(p.get("n")), "n_min": fmt(p.get("n_min")),
            "loss": fmt(p.get("loss")), "stddev_between": fmt(p.get("stddev_between")),
            "se": fmt(p.get("se")), "stddev_within": fmt(p.get("stddev_within")),
            "coverage": fmt(p.get("coverage")), "status": status_label(p.get("status")),
            "thin": thin,
            "by_category": category_lines(p.get("by_category"), effects.get(name) if isinstance(name, str) else None,
                                          ("unterbelegt", needs) if needs else None),
        })
    return view
