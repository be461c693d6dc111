"""The "Changes since <baseline>" section and the charts of report.html.

Enters: diff.json, this run's and the baseline's results, the comparable runs before this
one, comparison.json. Leaves: the view the template shows first, and inline SVG charts
(report/charts.py), each with its numbers as a table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..base.errors import ObaiError
from .answer_diff import word_diff
from .charts import Chart, delta_intervals, latency_strip, verdict_history
from .diff import SHOWN
from .diff_file import DIFF_FILE, read_units
from .html_inputs import read_cells
from .html_inputs import verdict_history as history_of

TITLES = {"new_fail": "New fails", "new_inconclusive": "Newly inconclusive", "flaky": "Flaky (repeats disagree)",
          "still_failing": "Still failing", "fixed": "Fixed", "changed": "Other verdict changes",
          "new_case": "New cases", "removed_case": "Removed cases"}
ANSWER_CHARS = 1500
SHOWN_PER_CLASS = 50  # units of one class shown with their answers and rules; the others are counted


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS] + " …"


def _answers(unit: dict) -> list[dict]:
    """The baseline's and this run's answer, word differences marked; an async unit's follow-up answers too."""
    out = []
    for label, now, before in (("answer", "answer", "baseline_answer"),
                               ("follow-up answer", "followup_answer", "baseline_followup_answer")):
        if now not in unit and before not in unit:
            continue
        old, new = word_diff(_cut(unit.get(before)), _cut(unit.get(now)))
        out.append({"label": label, "baseline": old, "now": new, "same": old == new})
    return out


def _outcome(status, code) -> str:
    """``fail routing.skill_missing``; ``—`` for a rule that did not run on that side."""
    return "—" if status is None else f"{status}{' ' + code if code else ''}"


def _money(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def changes_view(diff: dict | None) -> dict | None:
    """What the section shows: baseline, counts and the changed units grouped by class, new fails first
    (``diff``: diff.json in memory; :func:`changes_of` reads it a unit at a time)."""
    if diff is None:
        return None
    return changes_of(diff, diff.get("units", []))


def changes_of(head: dict, units: Iterable[dict]) -> dict:
    """The section for a diff given as its keys but the units (``head``) and its units, one at a time: the
    first ``SHOWN_PER_CLASS`` units of each class in full, the others counted."""
    base = head.get("baseline")
    kept: dict[str, list[dict]] = {cls: [] for cls in SHOWN}
    counted = {cls: 0 for cls in SHOWN}
    for u in units:
        cls = u.get("class")
        if cls in kept:
            counted[cls] += 1
            if len(kept[cls]) < SHOWN_PER_CLASS:
                kept[cls].append(_unit(u, cls))
    groups = [{"cls": cls, "title": TITLES[cls], "n": counted[cls], "units": kept[cls],
               "more": counted[cls] - len(kept[cls])} for cls in SHOWN if counted[cls]]
    stochastic = [c for c in head.get("stochastic_cases") or [] if c.get("flaky") or c.get("baseline_pass_rate") is not None]
    totals = head.get("totals") or {}
    run_t, base_t = totals.get("run") or {}, totals.get("baseline") or {}
    return {
        "baseline": (base or {}).get("run_id"),
        "counts": head.get("counts") or {},
        "groups": groups,
        "stochastic": [{"case": c["case_id"], "repeats": c["repeats"], "flaky": c["flaky"],
                        "pass_rate": "—" if c["pass_rate"] is None else f"{c['pass_rate']:.0%}",
                        "baseline_pass_rate": "—" if c["baseline_pass_rate"] is None else f"{c['baseline_pass_rate']:.0%}"}
                       for c in stochastic],
        "totals": {"turn_s": _secs(run_t.get("turn_ms")), "baseline_turn_s": _secs(base_t.get("turn_ms")),
                   "tokens": run_t.get("tokens"), "baseline_tokens": base_t.get("tokens"),
                   "cost": _money(run_t.get("cost")), "baseline_cost": _money(base_t.get("cost"))},
    }


def _unit(u: dict, cls: str) -> dict:
    show_answers = cls in ("new_fail", "fixed", "still_failing", "new_inconclusive", "changed")
    return {
        "id": u.get("unit_id", ""), "feature": u.get("feature", ""),
        "verdict": u.get("verdict") or "—", "reasons": ", ".join(u.get("reasons") or []),
        "baseline_verdict": u.get("baseline_verdict") or "—",
        "baseline_reasons": ", ".join(u.get("baseline_reasons") or []),
        "codes_changed": u.get("codes_changed"),
        "answers": _answers(u) if show_answers else [],
        "rules": [{"rule": r.get("rule", ""), "now": _outcome(r.get("status"), r.get("code")),
                   "before": _outcome(r.get("baseline_status"), r.get("baseline_code"))}
                  for r in u.get("changed_rules") or []],
    }


def _secs(ms) -> str:
    return "—" if ms is None else f"{ms / 1000:.1f} s"


def charts(run_dir: Path, results: dict, diff: dict | None) -> list[Chart]:
    """The charts that have data: verdicts over runs, latency per feature, loss change with intervals."""
    out = []
    history = verdict_history(history_of(results, run_dir))
    if history:
        out.append(history)
    by_feature = (diff or {}).get("latency_by_feature") or {}
    strip = latency_strip({f: (v.get("run") or [], v.get("baseline") or []) for f, v in by_feature.items()})
    if strip:
        out.append(strip)
    cells, mde = read_cells(Path(run_dir) / "comparison.json")
    loss = delta_intervals(cells, mde)
    if loss:
        out.append(loss)
    return out


def changes_and_charts(run_dir: Path, results: dict) -> dict:
    path = Path(run_dir) / DIFF_FILE
    if not path.exists():
        return {"changes": None, "charts": charts(run_dir, results, None)}
    try:
        head, units = read_units(path)
        changes = changes_of(head, units)
    except (OSError, ObaiError, KeyError, TypeError, ValueError):  # an unreadable diff.json: the page says nothing
        return {"changes": None, "charts": charts(run_dir, results, None)}
    return {"changes": changes, "charts": charts(run_dir, results, head)}
