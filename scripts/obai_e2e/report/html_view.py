"""The view model of report.html: what the template and the client script show for a run.

Pure functions of the inputs (html_inputs.py); strings stay raw here and are escaped by
the template's autoescaping and the client's textContent.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from ..base.invisible import reveal
from ..config.cases import CaseSet
from ..config.units import unit_key
from ..judge.panel.calibration import lines as calibration_lines
from ..rundir.inputs import lines as inputs_lines
from . import judges_note
from .html_changes import changes_and_charts
from .report_md import NOT_ASKED_SHOWN
from .html_loss import fmt, loss_view
from .trace_pages import page_links
from .html_inputs import (
    VERDICT_ORDER,
    DetailBlock,
    cases_for_run,
    read_comparison,
    read_detail_blocks,
    read_suite,
    read_top_regressions,
    results_rows,
)

VERDICT_LABELS = {"pass": "pass", "fail": "fail", "needs_review": "needs review", "inconclusive": "inconclusive",
                  "not_judged": "not judged"}
PAGE_SIZE = 100  # rows (a unit, or a case's repeats) per page of the client script
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SHOWN_OUTCOMES = ("fail", "needs_review")
TRACE_CHARS = 50_000  # per curated trace in the page; results.json keeps the whole text
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}



def latency_text(latency: dict | None) -> str:
    """``1234`` (ms) for a turn, ``initial+wait+followup`` (ms+s+ms) for an async case."""
    lat = latency or {}
    turn, wait, follow = lat.get("turn_ms"), lat.get("wait_s"), lat.get("followup_ms")
    if wait is not None or follow is not None:
        return f"{_num(turn)}+{_num(wait)}+{_num(follow)}"
    return "" if turn is None else str(turn)


def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def is_async(entry: dict) -> bool:
    lat = entry.get("latency") or {}
    return (lat.get("wait_s") is not None or lat.get("followup_ms") is not None
            or entry.get("followup_curated_trace") is not None)


def trace_text(entry: dict) -> str:
    ids = [t for t in entry.get("trace_ids") or [] if t]
    if is_async(entry):
        first = ids[0] if ids else "—"
        follow = ids[1] if len(ids) > 1 else "—"
        return f"{first} → {follow}"
    return ids[0] if ids else "—"


def panel_summary(panel: Any) -> list[list[str]]:
    """A judge panel as ``[label, text]`` pairs: per question the majority, votes and each judge's choice."""
    if not isinstance(panel, dict):
        return []
    questions = panel.get("questions")
    if isinstance(questions, dict):
        judges = panel.get("judges") or []
        models = panel.get("models") if isinstance(panel.get("models"), dict) else {}
        who = ", ".join(f"{j} ({models[j]})" if j in models else str(j) for j in judges) if models else ""
        outcomes = panel.get("outcomes") if isinstance(panel.get("outcomes"), dict) else {}
        silent = ", ".join(f"{j} {o}" for j, o in sorted(outcomes.items()) if o != "answered")
        pairs = [["panel", f"round {panel.get('round', '—')}, {len(judges)} of {panel.get('panel_size', '—')} "
                           f"judges answered" + (f": {who}" if who else "") + (f" (no vote: {silent})" if silent else "")]]
        for name in sorted(questions):
            q = questions[name] if isinstance(questions[name], dict) else {}
            if q.get("applies") is False:
                pairs.append([str(name), "not applicable"])
                continue
            majority = q.get("majority")
            text = f"majority: {majority}" if q.get("decided") else f"no majority ({majority or 'abstain'})"
            if q.get("trips"):
                text += " — trips"
            votes = q.get("votes") or {}
            if isinstance(votes, dict) and votes:
                text += "; votes " + ", ".join(f"{k}: {v}" for k, v in sorted(votes.items(), key=lambda kv: str(kv[0])))
            choices = q.get("choices") or {}
            if isinstance(choices, dict) and choices:
                text += "; " + ", ".join(f"{j} → {c}" for j, c in sorted(choices.items()))
            for r in q.get("rationale") or []:
                if isinstance(r, dict) and r.get("text"):
                    text += f"\n{r.get('judge', '?')}: {_short(str(r['text']), 300)}"
            pairs.append([str(name), text])
        return pairs
    pairs = []
    for key in sorted(panel):
        value = panel[key]
        if isinstance(value, (dict, list)):
            text = _short(json.dumps(value, sort_keys=True, ensure_ascii=False), 400)
        else:
            text = "—" if value is None else str(value)
        pairs.append([str(key), text])
    return pairs


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + " …"


def _cut(text: str) -> str:
    if len(text) <= TRACE_CHARS:
        return text
    return text[:TRACE_CHARS] + f"\n[… {len(text) - TRACE_CHARS} more characters cut; results.json has the whole text]"


def _links(entry: dict, local: bool) -> list[list[str]]:
    """(trace id, URL) pairs of the trace backend's pages; only http(s) URLs, and none of a store on this
    machine when the run has its own pages (``local``): its port changes when it restarts."""
    urls = [u for u in entry.get("trace_urls") or [] if isinstance(u, str) and u.startswith(("http://", "https://"))]
    if local:
        urls = [u for u in urls if urlsplit(u).hostname not in LOOPBACK]
    out = []
    for trace_id in entry.get("trace_ids") or []:
        url = next((u for u in urls if quote(str(trace_id), safe="") in u), None)
        if url:
            out.append([str(trace_id), url])
    return out


def unit_view(entry: dict, block: DetailBlock | None, case, pages: list[list[str]] | None = None) -> dict:
    """What the client script needs for one row and card (the curated traces are shown on demand).

    ``pages``: (trace id, path) of the run's own trace pages of the unit.
    """
    verdict = entry.get("verdict", "not_judged")
    view: dict[str, Any] = {
        "id": entry.get("unit_id", ""),
        "case": entry.get("case_id", ""),
        "group": unit_key(entry.get("case_id", ""), entry.get("channel")),
        "feature": entry.get("feature", ""),
        "verdict": verdict,
        "reasons": list(entry.get("reasons") or []),
        "query": entry.get("query", ""),
        "traces": trace_text(entry),
        "async": is_async(entry),
        "latency": latency_text(entry.get("latency")),
        "labels": [[k, str(v)] for k, v in sorted((entry.get("labels") or {}).items())],
        "judged_by": entry.get("judged_by", ""),
        "exit_code": entry.get("exit_code"),
        "timed_out": bool(entry.get("timed_out")),
        "answer": _cut(entry.get("answer") or ""),
        "followup_answer": _cut(entry.get("followup_answer") or ""),
        "trace": _cut(entry.get("curated_trace") or ""),
        "followup_trace": _cut(entry.get("followup_curated_trace") or ""),
        "trace_pages": pages or [],
        "trace_links": _links(entry, bool(pages)),
        "cost": entry.get("cost"),
        "tokens": (entry.get("usage") or {}).get("total_tokens"),
    }
    if entry.get("not_asked"):
        view["not_asked"] = [str(q) for q in entry["not_asked"]]
    if verdict != "pass" or view.get("not_asked"):
        src = block if block is not None else None
        view["expected"] = (src.expected if src and src.expected else entry.get("expected", "")) or ""
        view["observed"] = (src.observed if src and src.observed else entry.get("observed", "")) or ""
        view["judgment"] = (src.judgment if src and src.judgment else entry.get("judgment", "")) or ""
    outcomes = []
    for o in entry.get("rule_outcomes") or []:
        if o.get("status") in SHOWN_OUTCOMES:
            outcomes.append({
                "rule": o.get("rule", ""), "status": o.get("status", ""), "code": o.get("code") or "",
                "detail": o.get("detail", ""),
                "evidence": [{"span": e.get("span_id") or "", "source": e.get("source") or "",
                              "excerpt": e.get("excerpt", "")} for e in o.get("evidence") or []],
            })
    if outcomes:
        view["outcomes"] = outcomes
    panel = panel_summary(entry.get("judge_panel"))
    if panel:
        view["panel"] = panel
    if entry.get("override"):
        view["override"] = json.dumps(entry["override"], sort_keys=True, ensure_ascii=False)
    if isinstance(entry.get("dropped"), dict) and entry["dropped"]:
        view["dropped"] = "; ".join(f"{code}: {why}" for code, why in sorted(entry["dropped"].items()))
    if case is not None:
        if case.description and case.provenance != "korpus":
            view["description"] = case.description
        if case.smoke:
            view["smoke"] = True
        if case.known_needs_review:
            view["known_needs_review"] = list(case.known_needs_review)
    return view


def embed_json(data: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` block that no string can break out of, invisible
    characters written as ``<U+XXXX>``."""
    # Invisible characters occur only inside the JSON strings, so they are revealed in place.
    text = reveal(json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    for raw, escaped in _JSON_ESCAPES.items():
        text = text.replace(raw, escaped)
    return Markup(text)


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


def _not_asked(summary: dict, units: list[dict]) -> dict:
    """The count of judgment questions no judge was asked (shown under the changes) and the units that have
    them (their own section, further down)."""
    n_units = int(summary.get("units_not_asked") or 0)
    listed = [(u["id"], ", ".join(u["not_asked"])) for u in units if u.get("not_asked")][:NOT_ASKED_SHOWN]
    return {"questions": int(summary.get("questions_not_asked") or 0), "units": n_units, "list": listed,
            "more": max(0, n_units - len(listed))}


def build_context(run_dir: Path, case_set: CaseSet | None = None) -> dict:
    """The page's data; ``case_set`` is the run's own cases when the caller has them loaded."""
    run_dir = Path(run_dir)
    # Each unit becomes its card's view as it is read: a run of any size never holds its
    # units' rule outcomes and curated traces all at once.
    results, entries = results_rows(run_dir / "results.json")
    blocks = read_detail_blocks(run_dir / "report.md")
    if case_set is None:
        case_set = cases_for_run(results, run_dir)
    cases = {c.id: c for c in case_set.cases} if case_set is not None else {}
    units = [unit_view(e, blocks.get(e.get("unit_id", "")), cases.get(e.get("case_id", "")), page_links(run_dir, e))
             for e in entries]

    summary = results.get("summary") or {}
    total = summary.get("total", len(units))
    counts = [{"verdict": v, "label": VERDICT_LABELS[v], "n": int(summary.get(v, 0) or 0)} for v in VERDICT_ORDER
              if v != "not_judged" or summary.get(v)]
    for c in counts:
        c["width"] = f"{(100 * c['n'] / total) if total else 0:.4f}%"
    features: dict[str, int] = {}
    for u in units:
        features[u["feature"]] = features.get(u["feature"], 0) + 1

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
        "features": sorted(features.items()),
        "disabled": [{"id": d.get("id", ""), "reason": d.get("reason", "")} for d in results.get("disabled") or []],
        "judges": judges_view(results.get("judges")),
        "inputs": inputs_lines(results.get("inputs")),  # live inputs that changed while the run went on
        "loss": loss_view(suite, regressions, read_comparison(run_dir / "comparison.json")),
        **changes_and_charts(run_dir, results),
        "data": {"page_size": PAGE_SIZE, "units": units,
                 "verdict_labels": VERDICT_LABELS},
    }


