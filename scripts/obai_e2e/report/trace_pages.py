"""The run's own trace pages: ``traces/<unit>.html`` (and ``traces/<unit>.followup.html``).

Enters: each unit's trace snapshots (drive/trace_snapshot.py) and its results entry (the
spans its rule outcomes cite). Leaves: one self-contained page per trace, in the trace
store's view (tracestore/trace_view.py), with the cited spans marked and a link back to
the unit's card in report.html. report.html and report.md link them by relative paths, so
the links hold after the trace store restarts and in a copied run directory or CI artifact.

Rendering again gives the same bytes; an unchanged page is not rewritten.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from ..base.fsutil import atomic_write_bytes, fsync_dir
from ..drive.trace_snapshot import SNAPSHOT_DIR, TraceSnapshot, load_snapshots
from ..tracestore.trace_view import trace_page
from .rows import open_results

ROLE_SUFFIX = {"initial": "", "followup": ".followup"}
ROLE_TEXT = {"initial": "the turn", "followup": "the follow-up turn"}


def page_name(unit_id: str, role: str) -> str:
    """The page's path relative to the run directory (unit ids are checked: no path characters)."""
    return f"{SNAPSHOT_DIR}/{unit_id}{ROLE_SUFFIX.get(role, '.' + role)}.html"


def page_links(run_dir: Path, entry: dict) -> list[list[str]]:
    """(trace id, path) of each page the run has of this unit's traces: the turn's, then the follow-up's."""
    unit_id = entry.get("unit_id", "")
    ids = [t for t in entry.get("trace_ids") or [] if t]
    roles = ("initial", "followup") if entry.get("followup_curated_trace") is not None or len(ids) > 1 else ("initial",)
    out = []
    for role, trace_id in zip(roles, ids):
        path = page_name(unit_id, role)
        if (Path(run_dir) / path).is_file():
            out.append([str(trace_id), path])
    return out


def cited_spans(entry: dict) -> dict[str, list[str]]:
    """Span id → the codes (or rules) whose evidence cites it, for outcomes that did not pass."""
    cited: dict[str, list[str]] = {}
    for o in entry.get("rule_outcomes") or []:
        if not isinstance(o, dict) or o.get("status") in ("pass", "skipped"):
            continue
        for ev in o.get("evidence") or []:
            sid = ev.get("span_id") if isinstance(ev, dict) else None
            if sid:
                label = o.get("code") or o.get("rule") or "?"
                if label not in cited.setdefault(str(sid), []):
                    cited[str(sid)].append(label)
    return cited


def render_page(snap: TraceSnapshot, unit_id: str, verdict: str, cited: dict[str, list[str]]) -> bytes:
    back = (f"../report.html#unit-{quote(unit_id, safe='')}", f"← {unit_id} in report.html")
    note = "" if snap.complete else "The trace or some of its spans had not ended when it was read."
    return trace_page(snap.trace, snap.spans, total_spans=snap.total_spans or len(snap.spans), back=back,
                      subtitle=f"unit {unit_id} ({verdict}) · {ROLE_TEXT.get(snap.role, snap.role)}",
                      cited=cited, note=note)


def write_trace_pages(run_dir: Path) -> dict:
    """Write the page of every trace the run kept; the number written and left unchanged."""
    run_dir = Path(run_dir)
    written = unchanged = 0
    if not (run_dir / SNAPSHOT_DIR).is_dir():
        return {"trace_pages": 0, "unchanged": 0}
    for _, entry in open_results(run_dir / "results.json", check=False):
        unit_id = entry.get("unit_id", "")
        snaps = load_snapshots(run_dir, unit_id)
        if not snaps:
            continue
        cited = cited_spans(entry)
        for snap in snaps:
            data = render_page(snap, unit_id, entry.get("verdict", "not_judged"), cited)
            path = run_dir / page_name(unit_id, snap.role)
            if path.exists() and path.read_bytes() == data:
                unchanged += 1
                continue
            # A page is made again from the kept trace at any time (render-report): no fsync per page,
            # the folder's names are made durable once at the end.
            atomic_write_bytes(path, data, durable=False)
            written += 1
    if written:
        fsync_dir(run_dir / SNAPSHOT_DIR)
    return {"trace_pages": written, "unchanged": unchanged}
