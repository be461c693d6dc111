"""What changed since the baseline: every unit's verdict against the same unit of the baseline run.

Enters: this run's results entries and the baseline's (its results.json), matched by unit
id. Leaves: ``diff.json`` (schemas/diff.v1.schema.json) and the one-line summary the CLI,
report.md, report.html and the CI summary show first.

Classes, per unit: ``new_fail`` (it fails now and did not fail in the baseline),
``fixed`` (it failed and now does not), ``still_failing`` (with ``codes_changed``),
``new_inconclusive`` (inconclusive now, not before), ``changed`` (another verdict change,
e.g. pass ↔ needs_review), ``unchanged``, ``new_case`` (not in the baseline), and
``removed_case`` (only in the baseline). A stochastic case whose repeats disagree in this
run is ``flaky`` (all its units), and its pass rate is set beside the baseline's.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..base.fsutil import dumps_json, write_once
from ..base.mdtable import inline
from ..config.units import unit_key

DIFF_SCHEMA_VERSION = 1
CLASSES = ("new_fail", "fixed", "new_inconclusive", "still_failing", "flaky", "changed", "new_case",
           "removed_case", "unchanged")
# The order a reader wants: what broke first.
SHOWN = ("new_fail", "new_inconclusive", "flaky", "still_failing", "fixed", "changed", "new_case", "removed_case")
ANSWER_CHARS = 2000


# What build_diff reads of a results entry; its rule outcomes only by rule, status and code.
DIFF_FIELDS = ("unit_id", "case_id", "channel", "feature", "verdict", "reasons", "stochastic", "answer",
               "followup_answer", "latency")


def diff_fields(entry: dict) -> dict:
    """The part of a results entry the diff compares: without evidence, details and curated traces,
    so that both runs' units of a large run fit in memory at once."""
    out = {k: entry[k] for k in DIFF_FIELDS if k in entry}
    out["rule_outcomes"] = [{"rule": o["rule"], "status": o.get("status"), "code": o.get("code")}
                            for o in entry.get("rule_outcomes") or []]
    return out


def _codes(entry: dict) -> list[str]:
    return list(entry.get("reasons") or [])


def _rules(entry: dict) -> dict[str, tuple[str, str | None]]:
    return {o["rule"]: (o.get("status"), o.get("code")) for o in entry.get("rule_outcomes") or []}


def changed_rules(new: dict, base: dict) -> list[dict]:
    """Rule outcomes whose status or code differs between the two entries."""
    a, b = _rules(new), _rules(base)
    out = []
    for rule in sorted(set(a) | set(b)):
        (ns, nc), (bs, bc) = a.get(rule, (None, None)), b.get(rule, (None, None))
        if (ns, nc) != (bs, bc):
            out.append({"rule": rule, "status": ns, "code": nc, "baseline_status": bs, "baseline_code": bc})
    return out


def classify(new: dict | None, base: dict | None) -> str:
    if base is None:
        return "new_case"
    if new is None:
        return "removed_case"
    nv, bv = new["verdict"], base["verdict"]
    if nv == "fail":
        return "still_failing" if bv == "fail" else "new_fail"
    if nv == "inconclusive" and bv != "inconclusive":
        return "new_inconclusive"  # also after a fail: the fail is not known to be fixed
    if bv == "fail":
        return "fixed" if nv in ("pass", "needs_review") else "changed"
    return "unchanged" if nv == bv else "changed"


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS] + f" … [cut: {len(text) - ANSWER_CHARS} more]"


def _pass_rate(entries: list[dict]) -> float | None:
    judged = [e for e in entries if e["verdict"] not in ("inconclusive", "not_judged")]
    return round(sum(e["verdict"] == "pass" for e in judged) / len(judged), 4) if judged else None


def _key(entry: dict) -> str:
    return unit_key(entry["case_id"], entry.get("channel"))


def build_diff(run_id: str, entries: list[dict], baseline: dict | None) -> dict:
    """diff.json for this run's ``entries`` against the ``baseline`` results (None: no baseline)."""
    base_entries = {e["unit_id"]: e for e in (baseline or {}).get("units") or []}
    units = []
    by_case: dict[str, list[dict]] = defaultdict(list)
    for e in entries:  # a case on each of its channels: a channel's own failure is no flakiness
        by_case[_key(e)].append(e)
    flaky_cases = {cid for cid, es in by_case.items()
                   if len(es) > 1 and any(e.get("stochastic") for e in es)
                   and len({e["verdict"] for e in es if e["verdict"] not in ("inconclusive", "not_judged")}) > 1}
    for e in entries:
        b = base_entries.get(e["unit_id"]) if baseline is not None else None
        cls = "flaky" if _key(e) in flaky_cases else classify(e, b if baseline is not None else None)
        item: dict[str, Any] = {
            "unit_id": e["unit_id"], "case_id": e["case_id"], "feature": e.get("feature", ""), "class": cls,
            "verdict": e["verdict"], "reasons": _codes(e),
            "baseline_verdict": b["verdict"] if b else None, "baseline_reasons": _codes(b) if b else None,
        }
        if cls == "still_failing":
            item["codes_changed"] = _codes(e) != _codes(b)
        if b is not None and cls not in ("unchanged",):
            item["changed_rules"] = changed_rules(e, b)
            item["answer"] = _cut(e.get("answer"))
            item["baseline_answer"] = _cut(b.get("answer"))
            if e.get("followup_answer") is not None or b.get("followup_answer") is not None:
                # an async unit: the first answer only says a job was queued; the result is the follow-up's
                item["followup_answer"] = _cut(e.get("followup_answer"))
                item["baseline_followup_answer"] = _cut(b.get("followup_answer"))
        units.append(item)
    if baseline is not None:
        seen = {e["unit_id"] for e in entries}
        for uid, b in base_entries.items():
            if uid not in seen:
                units.append({"unit_id": uid, "case_id": b["case_id"], "feature": b.get("feature", ""),
                              "class": "removed_case", "verdict": None, "reasons": [],
                              "baseline_verdict": b["verdict"], "baseline_reasons": _codes(b)})
    base_by_case: dict[str, list[dict]] = defaultdict(list)
    for b in base_entries.values():
        base_by_case[_key(b)].append(b)
    cases = [{"case_id": cid, "repeats": len(es), "flaky": cid in flaky_cases, "pass_rate": _pass_rate(es),
              "baseline_pass_rate": _pass_rate(base_by_case[cid]) if cid in base_by_case else None}
             for cid, es in by_case.items() if any(e.get("stochastic") for e in es)]
    counts = {c: sum(1 for u in units if u["class"] == c) for c in CLASSES}
    brun = (baseline or {}).get("run") or {}
    return {
        "schema_version": DIFF_SCHEMA_VERSION, "kind": "obai-e2e-diff", "run_id": run_id,
        "baseline": {"run_id": brun.get("run_id"), "finished_at": brun.get("finished_at")} if baseline else None,
        "counts": counts, "units": units, "stochastic_cases": cases,
        "latency_by_feature": latency_by_feature(entries, list(base_entries.values())),
    }


def latency_by_feature(entries: list[dict], base_entries: list[dict]) -> dict[str, dict[str, list[float]]]:
    """Turn latencies in seconds per feature, this run and the baseline (for the report's strip plot)."""
    out: dict[str, dict[str, list[float]]] = {}
    for side, items in (("run", entries), ("baseline", base_entries)):
        for e in items:
            ms = (e.get("latency") or {}).get("turn_ms")
            if isinstance(ms, (int, float)) and not isinstance(ms, bool):
                out.setdefault(e.get("feature", ""), {"run": [], "baseline": []})[side].append(round(ms / 1000, 3))
    return dict(sorted(out.items()))


def summary(diff: dict) -> dict:
    """The part results.json keeps: counts and the ids of each non-empty class but unchanged."""
    out = {"baseline_run_id": (diff.get("baseline") or {}).get("run_id"), "counts": diff["counts"]}
    for cls in SHOWN:
        ids = [u["unit_id"] for u in diff["units"] if u["class"] == cls]
        if ids:
            out[cls] = ids
    return out


def failing_not_before(diff: dict) -> list[str]:
    """Units that fail now and did not fail in the baseline; without a baseline, every failed unit."""
    return [u["unit_id"] for u in diff["units"] if u.get("verdict") == "fail" and u.get("baseline_verdict") != "fail"]


def summary_line(diff: dict, limit: int = 5) -> str:
    """``changes since <run>: 2 new_fail (S4, MD2), 1 fixed (F5)`` — or why there is nothing to compare."""
    if diff.get("baseline") is None:
        return "changes: no baseline to compare with (no earlier finished run of this case set and filters, " \
               "and no --baseline): every unit is new"
    parts = []
    for cls in SHOWN:
        ids = [u["unit_id"] for u in diff["units"] if u["class"] == cls]
        if ids:
            shown = ", ".join(ids[:limit]) + (f", +{len(ids) - limit} more" if len(ids) > limit else "")
            parts.append(f"{len(ids)} {cls} ({shown})")
    head = f"changes since {diff['baseline']['run_id']}: "
    return head + ("; ".join(parts) if parts else f"none ({diff['counts']['unchanged']} unchanged)")


def write_diff(run_dir: Path, diff: dict) -> Path:
    path = Path(run_dir) / "diff.json"
    write_once(path, dumps_json(diff))
    return path


def markdown_lines(diff: dict, limit: int = 20) -> list[str]:
    """The changes as Markdown list lines: new fails first, each with its codes."""
    if diff.get("baseline") is None:
        return ["- no baseline to compare with (no earlier finished run of this case set and filters, and no "
                "--baseline): every unit is new"]
    out = []
    for cls in SHOWN:
        items = [u for u in diff["units"] if u["class"] == cls]
        if not items:
            continue
        shown = []
        for u in items[:limit]:
            codes = ", ".join(u.get("reasons") or [])
            was = f"was {u['baseline_verdict']}" if u.get("baseline_verdict") else ""
            detail = inline("; ".join(x for x in (codes, was) if x))
            shown.append(f"{inline(u['unit_id'])} ({detail})" if detail else inline(u["unit_id"]))
        more = f", +{len(items) - limit} more" if len(items) > limit else ""
        out.append(f"- **{len(items)} {cls}**: " + ", ".join(shown) + more)
    if not out:
        out.append(f"- no verdict changed ({diff['counts']['unchanged']} units unchanged)")
    return out
