"""The view model of report.html: what the template shows for a run around its units.

Pure functions of the inputs (html_inputs.py); strings stay raw here and are escaped by
the template's autoescaping. A unit's own data is html_unit.py's, the data block of all
units html_units.py's (written a unit at a time); :func:`build_context` gathers the
whole page in memory for a small run.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from ..config.cases import CaseSet
from ..judge.panel.calibration import lines as calibration_lines
from ..rundir.inputs import lines as inputs_lines
from . import judges_note
from .html_changes import changes_and_charts
from .html_inputs import (
    VERDICT_ORDER,
    DetailBlocks,
    cases_for_run,
    read_comparison,
    read_suite,
    read_top_regressions,
    results_rows,
)
from .html_loss import fmt, loss_view
from .html_unit import embed_json, latency_text, panel_summary, trace_text, unit_view  # noqa: F401 - the page's API
from .html_units import VERDICT_LABELS, UnitsBlock, write_units
from .report_md import NOT_ASKED_SHOWN


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "—"
    s = float(seconds)
    if s < 60:
        return f"{s:.1f} s"
    minutes, sec = divmod(int(round(s)), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def judges_view(judges: Any) -> dict | None:
    """The run's panel in one line each: who judged with which model, and what it cost."""
    if not isinstance(judges, dict):
        return None
    names = []
    for j in judges.get("judges") or []:
        detail = ", ".join(str(x) for x in (j.get("model"), j.get("family")) if x)
        names.append(f"{j.get('name')} ({detail})" + ("" if j.get("answered", True) else
                                                      f" — {j.get('outcome') or 'no answer'}"))
    a = judges.get("agreement") or {}
    if a.get("items"):
        kappa = "n/a" if a.get("fleiss_kappa") is None else fmt(a["fleiss_kappa"], 2)
        agreement = f"{fmt(a.get('percent_agreement'), 2)} (κ {kappa}, {a['items']} items)"
    else:
        agreement = "—"
    tokens = (judges.get("tokens") or {}).get("total")
    cost = judges.get("cost")
    spent = f"{tokens:,} tokens" if isinstance(tokens, int) else "—"
    if cost is not None:
        spent += f", {cost} {judges.get('currency') or ''}".rstrip()
    undecided = len(judges.get("undecided") or [])
    if undecided:
        agreement += f"; {undecided} question(s) without a majority (undecided)"
    warn = judges_note.incomplete(judges)
    return {"round": judges.get("round", ""), "who": "; ".join(names) or "—", "agreement": agreement, "spent": spent,
            "calibration": calibration_lines(judges.get("calibration")),
            "budget": judges_note.budget_line(judges) or "—",
            "warning": judges_note.headline(judges) if warn else None,
            "details": judges_note.details(judges) if warn else []}


def _not_asked(summary: dict, units: UnitsBlock) -> dict:
    """The count of judgment questions no judge was asked (shown under the changes) and the units that have
    them (their own section, further down)."""
    n_units = int(summary.get("units_not_asked") or 0)
    listed = [(uid, ", ".join(qs)) for uid, qs in units.not_asked[:NOT_ASKED_SHOWN]]
    return {"questions": int(summary.get("questions_not_asked") or 0), "units": n_units, "list": listed,
            "more": max(0, n_units - len(listed))}


def page_context(run_dir: Path, results: dict, units: UnitsBlock) -> dict:
    """Everything the template shows but the units' data block (``results``: results.json's head)."""
    run_dir = Path(run_dir)
    summary = results.get("summary") or {}
    total = summary.get("total", units.units)
    counts = [{"verdict": v, "label": VERDICT_LABELS[v], "n": int(summary.get(v, 0) or 0)} for v in VERDICT_ORDER
              if v != "not_judged" or summary.get(v)]
    for c in counts:
        c["width"] = f"{(100 * c['n'] / total) if total else 0:.4f}%"
    run = results.get("run") or {}
    target = run.get("target") or {}
    suite = read_suite(run_dir / "suite.json")
    regressions = read_top_regressions(run_dir / "TOP-REGRESSIONS.md")
    catalog = run.get("catalog_version") or (suite or {}).get("catalog_version")
    commit = run.get("git_commit") or ""
    # Runs recorded before targets had a display name were all titled OBaI.
    heading = f"{target.get('display_name') or 'OBaI'} E2E Regression"
    return {
        "title": f"{heading} — {run.get('run_id', run_dir.name)}",
        "heading": heading,
        "run": {
            "run_id": run.get("run_id", ""), "created_at": run.get("created_at", ""),
            "finished_at": run.get("finished_at", ""), "duration": _duration(run.get("duration_s")),
            "target_name": target.get("name", ""), "target_version": target.get("version") or "",
            "catalog_version": catalog or "", "git_commit": commit, "git_short": commit[:12],
            "mode": run.get("mode", ""), "provenance": run.get("provenance", ""),
        },
        "total": total,
        "counts": counts,
        "not_asked": _not_asked(summary, units),
        "features": sorted(units.features.items()),
        "in_full": {"units": units.full, "of": units.units},
        "disabled": [{"id": d.get("id", ""), "reason": d.get("reason", "")} for d in results.get("disabled") or []],
        "judges": judges_view(results.get("judges")),
        "inputs": inputs_lines(results.get("inputs")),  # live inputs that changed while the run went on
        "loss": loss_view(suite, regressions, read_comparison(run_dir / "comparison.json")),
        **changes_and_charts(run_dir, results),
    }


def stream_units(run_dir: Path, out, case_set: CaseSet | None = None) -> tuple[dict, UnitsBlock, CaseSet | None]:
    """Write the units' data block into ``out``, a unit at a time; (results.json's head, what the page shows of
    the units, the case set)."""
    run_dir = Path(run_dir)
    results, entries = results_rows(run_dir / "results.json")
    if case_set is None:
        case_set = cases_for_run(results, run_dir)
    total = int((results.get("summary") or {}).get("total") or 0)
    info = write_units(out, entries, run_dir, total=total, blocks=DetailBlocks(run_dir / "report.md"),
                       case_set=case_set)
    return results, info, case_set


def build_context(run_dir: Path, case_set: CaseSet | None = None) -> dict:
    """The whole page's data in memory, units included (for a small run; the page itself is written a unit at
    a time by html.write_report); ``case_set`` is the run's own cases when the caller has them loaded."""
    block = io.BytesIO()
    results, info, _ = stream_units(run_dir, block, case_set)
    return {**page_context(run_dir, results, info), "data": json.loads(block.getvalue())}
