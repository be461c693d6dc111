"""What the loss layer writes for people: TOP-REGRESSIONS.md, comparison.json, LOSS-HISTORY.md.

Every row of TOP-REGRESSIONS.md cites the new run's log: unit id, rubric code, span id
and the evidence excerpt, from the first unit (by unit id) in that cell whose repeat has a
tripped code of the category and evidence to show. A finding without such a citation is
refused rather than written. An empty table is a valid result: no provable regression.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock

from ..base import schema
from ..base.errors import ObaiError
from ..base.fsutil import append_text, atomic_write_text, dumps_json, write_once
from ..base.mdtable import row, table_rows
from ..base.paths import runs_root
from ..base.pii import QUOTE_WITHHELD, may_quote
from .cells import UNTERBELEGT, count_cells
from .compare import Comparison
from .score import Scored
from .units import SEVERITY, tripped_codes

# The seed's columns in English; files written before keep the seed's German names, which are read too.
BASE_TOP_COLUMNS = ["partition", "category", "delta", "ci_low", "ci_high", "n", "run_id", "citation"]
TOP_COLUMNS = BASE_TOP_COLUMNS + ["detectable_effect"]
SEED_TOP_COLUMNS = ["partition", "kategorie", "delta", "ci_low", "ci_high", "n", "run_id", "log_zitat"]
HISTORY_COLUMNS = ["date", "catalog_version", "mode", "provenance", "suite_score", "completion", "coverage", "mde",
                   "sample_budget", "cells_under_populated", "findings_over_threshold", "top_regression_ci_low"]
SEED_HISTORY_COLUMNS = ["datum", *HISTORY_COLUMNS[1:9], "n_zellen_unterbelegt", "befunde_über_schwelle",
                        "top_regression_ci_low"]
COMPARISON_SCHEMA = "comparison.v1.schema.json"
HISTORY_FILE = "LOSS-HISTORY.md"
HISTORY_INDEX = ".loss-history.index"
EXCERPT_CHARS = 160
NONE = "—"


class CitationMissing(ObaiError):
    """A finding has no log citation in the new run; such a row would be invalid."""

    kind = "citation_missing"


def num(value: float | None) -> str:
    if value is None:
        return NONE
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text


def _head(columns: list[str]) -> str:
    return "| " + " | ".join(columns) + " |\n" + "|" + "---|" * len(columns) + "\n"


# ------------------------------------------------------------------------------ citations

@dataclass(frozen=True)
class Citation:
    """A pointer into the new run's log that shows a finding."""

    unit_id: str
    code: str
    span_id: str | None
    excerpt: str

    def text(self) -> str:
        return f"{self.unit_id} · {self.code} · span {self.span_id or NONE} · \"{self.excerpt}\""

    def to_json(self) -> dict:
        return {"unit_id": self.unit_id, "code": self.code, "span_id": self.span_id, "excerpt": self.excerpt}


def _short(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS].rstrip() + "…"


def _evidence_for(outcome: dict, code: str) -> dict | None:
    evidence = [e for e in outcome.get("evidence") or () if isinstance(e, dict)]
    codes = outcome.get("codes") or []
    if codes and len(codes) == len(evidence) and code in codes:
        candidates = [evidence[codes.index(code)]]  # one evidence per code (unverified numbers)
    else:
        candidates = evidence
    return next((e for e in candidates if (e.get("excerpt") or "").strip()), None)


def _deterministic_evidence(entry: dict, category) -> tuple[str, dict] | None:
    tripped = tripped_codes(entry)
    for o in entry.get("rule_outcomes") or ():
        if o.get("status") not in SEVERITY:
            continue
        for code in o.get("codes") or ((o.get("code"),) if o.get("code") else ()):
            if code in tripped and category.matches(code):
                ev = _evidence_for(o, code)
                if ev is not None:
                    return code, ev
    return None


def _feeds(category, key: str) -> bool:
    return key == category.id or category.matches(key)


def _panel_evidence(panel, category) -> tuple[str, dict] | None:
    """Evidence a judge panel gave for the category: a judge who rated it a loss, the span it cited
    and its rationale (the shape obai_e2e.judging writes), or a plain evidence list/dict."""
    if not isinstance(panel, dict):
        return None
    judges = panel.get("judges") or []
    questions = panel.get("questions")
    if isinstance(questions, dict):
        for feeds in sorted(k for k in questions if _feeds(category, k)):
            q = questions[feeds] if isinstance(questions[feeds], dict) else {}
            ratings = q.get("ratings") or []
            losing = {judges[i] for i, r in enumerate(ratings)
                      if i < len(judges) and isinstance(r, (int, float)) and r > 0}
            rationale = {r.get("judge"): r.get("text") or "" for r in q.get("rationale") or () if isinstance(r, dict)}
            for ev in q.get("evidence") or ():
                if not isinstance(ev, dict) or (losing and ev.get("judge") not in losing):
                    continue
                text = rationale.get(ev.get("judge")) or ", ".join(map(str, ev.get("numbers") or ()))
                spans = ev.get("spans") or [None]
                if text.strip():
                    return feeds, {"excerpt": text, "span_id": spans[0]}
    ev = panel.get("evidence")
    items: list[tuple[str, dict]] = []
    if isinstance(ev, dict):
        for code in sorted(k for k in ev if _feeds(category, k)):
            vals = ev[code] if isinstance(ev[code], list) else [ev[code]]
            items += [(code, e) for e in vals if isinstance(e, dict)]
    elif isinstance(ev, list):
        for e in ev:
            if isinstance(e, dict) and isinstance(e.get("code"), str) and _feeds(category, e["code"]):
                items.append((e["code"], e))
    for code, e in items:
        if (e.get("excerpt") or e.get("quote") or "").strip():
            return code, {"excerpt": e.get("excerpt") or e.get("quote"), "span_id": e.get("span_id")}
    return None


def _judged_evidence(entry: dict, category) -> tuple[str, dict] | None:
    found = _panel_evidence(entry.get("judge_panel"), category)
    if found:
        return found
    for o in entry.get("rule_outcomes") or ():  # the question's own evidence: the answer it was asked about
        rule = o.get("rule") or ""
        if category.matches(rule):
            ev = _evidence_for(o, rule)
            if ev is not None:
                return rule, ev
    return None


def cite(scored: Scored, partition_key: str, category_id: str, privacy=None) -> Citation | None:
    """The citation for one cell of ``scored`` (the new run), or None when it has none."""
    part = scored.partition(partition_key)
    if part is None:
        return None
    category = scored.catalog.by_id(category_id)
    table = scored.table
    if not len(table.case_of):
        return None
    in_part = np.isin(table.case_of, part.index)
    column = table.losses[:, category.index]
    hits = np.nonzero(in_part & (table.state == 1) & (column > 0))[0].tolist()   # NaN > 0 is False
    for r in sorted(hits, key=lambda i: table.unit_ids[i]):
        entry = scored.rows.entry(int(table.refs[r]))
        found = (_judged_evidence if category.model_judged else _deterministic_evidence)(entry, category)
        if found is None:
            continue
        code, ev = found
        excerpt = _short(ev.get("excerpt") or "")
        if not may_quote(entry.get("provenance"), privacy):
            excerpt = QUOTE_WITHHELD
        return Citation(table.unit_ids[r], code, ev.get("span_id"), excerpt)
    return None


# ------------------------------------------------------------------------------ TOP-REGRESSIONS.md

def top_regressions_md(comparison: Comparison, new: Scored, privacy=None) -> tuple[str, list[dict]]:
    """The file's text and the rows as data; raises CitationMissing for a finding without a citation."""
    run_id = new.suite.get("run_id") or NONE
    lines = [f"# Top regressions — {run_id}\n\n"]
    z = f"{comparison.z:.4f}" if comparison.z is not None else NONE
    lines.append(f"Baseline {comparison.baseline_run_id or NONE}, re-scored with catalog "
                 f"{new.catalog.version} in mode B; {comparison.k} cells compared, z = {z}, "
                 f"mde = {comparison.mde:g}. A row means the lower bound of delta ± z·se_delta exceeds the mde; "
                 "rows are ordered by that bound. detectable_effect is the smallest true delta this cell "
                 "lists with 80 % power: mde + (z + 0.8416)·se_delta.\n\n")
    lines.append(_head(TOP_COLUMNS))
    rows = []
    for c in comparison.findings:
        citation = cite(new, c.partition, c.category, privacy)
        if citation is None:
            raise CitationMissing(
                f"finding {c.partition} × {c.category} (ci_low {num(c.ci_low)}) has no log citation: no unit of "
                f"that cell in run {run_id} has a tripped {c.category} code with evidence; TOP-REGRESSIONS.md "
                "was not written")
        lines.append(row([c.partition, c.category, num(c.delta), num(c.ci_low), num(c.ci_high), c.n_new, run_id,
                          citation.text(), num(c.detectable_effect)]))
        rows.append({"partition": c.partition, "category": c.category, "delta": c.delta, "ci_low": c.ci_low,
                     "ci_high": c.ci_high, "n": c.n_new, "run_id": run_id, "citation": citation.to_json(),
                     "detectable_effect": c.detectable_effect})
    if not rows:
        lines.append(f"\nNo provable regression: no compared cell's lower bound exceeds mde = {comparison.mde:g}.\n")
    if comparison.partitions:
        lines.append("\n## What each partition can detect\n\n")
        for p in comparison.partitions:
            lines.append(f"- {escape_md(p['partition'])}: {p['text']} "
                         f"(n = {p['n_new']}, baseline n = {p['n_base']}, n_min = {p['n_min']})\n")
    return "".join(lines), rows


def escape_md(text: str) -> str:
    """Markdown-inert text for a list item."""
    return "".join("\\" + ch if ch in "\\`*_[]<>|#" else ch for ch in text)


def read_top_rows(text: str, *, fold_case: bool = False) -> list[dict[str, str]]:
    """The finding rows of a TOP-REGRESSIONS.md, with or without the detectable_effect column, under the English
    column names (a file with the seed's German ones is read as well)."""
    for columns in (TOP_COLUMNS, BASE_TOP_COLUMNS, SEED_TOP_COLUMNS + ["detectable_effect"], SEED_TOP_COLUMNS):
        rows = table_rows(text, columns, fold_case=fold_case)
        if rows:
            return [dict(zip(TOP_COLUMNS, r.values())) for r in rows]
    return []


def write_top_regressions(path: Path, comparison: Comparison, new: Scored, privacy=None) -> list[dict]:
    text, rows = top_regressions_md(comparison, new, privacy)
    write_once(path, text)
    return rows


def write_comparison(path: Path, comparison: Comparison, new: Scored, rows: list[dict]) -> None:
    data = comparison.to_json(new.catalog.version)
    data["citations"] = [{"partition": r["partition"], "category": r["category"], **r["citation"]} for r in rows]
    schema.check(data, COMPARISON_SCHEMA, source=str(path))
    write_once(path, dumps_json(data))


# ------------------------------------------------------------------------------ LOSS-HISTORY.md

def _suite_score_text(suite: dict) -> str:
    if suite["suite_status"] == "suppressed":
        return f"{NONE} (suppressed)"
    if suite["provenance"] == "mixed":
        return "; ".join(f"{k}={num(v)}" for k, v in sorted(suite["suite_scores"].items()))
    return num(suite["suite_score"])


def _datum(suite: dict) -> str:
    created = suite.get("run_created_at") or ""
    return (created[:19] + "Z") if len(created) >= 19 else (created or NONE)


def history_row(suite: dict, comparison: Comparison | None) -> str:
    top = comparison.findings[0].ci_low if comparison is not None and comparison.findings else None
    return row([
        _datum(suite), suite["catalog_version"], suite["mode"], suite["provenance"], _suite_score_text(suite),
        num(suite["completion_rate"]), num(suite["coverage"]), f"{suite['mde']:g}", suite["sample_budget"],
        count_cells(suite, UNTERBELEGT), len(comparison.findings) if comparison is not None else NONE, num(top),
    ])


def append_history(suite: dict, comparison: Comparison | None, root: Path | None = None) -> tuple[Path, bool]:
    """One row per run id in ``<runs root>/LOSS-HISTORY.md``; (path, appended).

    The sidecar index records each run id with its row before the row is appended, so a
    kill between the two writes is repaired on the next call and never duplicates a row.
    """
    root = Path(root) if root else runs_root()
    root.mkdir(parents=True, exist_ok=True)
    path, index = root / HISTORY_FILE, root / HISTORY_INDEX
    run_id = suite.get("run_id") or NONE
    with FileLock(str(root / ".loss-history.lock"), timeout=30):
        recorded = {}
        if index.exists():
            for line in index.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line; append_text trims it
                recorded.setdefault(item["run_id"], item["row"])
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if run_id in recorded:
            line = recorded[run_id]
            if line in text:
                return path, False
        else:
            line = history_row(suite, comparison)
            append_text(index, json.dumps({"run_id": run_id, "row": line}, ensure_ascii=False) + "\n")
        if not text:
            append_text(path, "# Loss history\n\nOne row per scored run (obai-e2e score-loss).\n\n"
                        + _head(HISTORY_COLUMNS))
        elif _head(SEED_HISTORY_COLUMNS) in text:  # written before the columns had English names; same order
            atomic_write_text(path, text.replace(_head(SEED_HISTORY_COLUMNS), _head(HISTORY_COLUMNS), 1))
        append_text(path, line)
        return path, True


__all__ = ["Citation", "CitationMissing", "cite", "top_regressions_md", "read_top_rows", "write_top_regressions", "write_comparison",
           "history_row", "append_history"]
