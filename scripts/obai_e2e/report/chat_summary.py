"""What the user reads in the chat when a run is finished: a few lines, each fact once.

Enters: what finishing returned (summary line, report paths, the loss layer's outcome)
and diff.json (read a unit at a time). Leaves: plain text — the changes since the baseline grouped by case (the
repeats of a case with the same outcome as one line with their count), the summary line,
the loss layer's statement in words that cannot be read as contradicting the fails, and
the report paths.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

from ..base.modeltext import inline, listing
from ..config.units import split_unit_id
from .diff import SHOWN
from .diff_file import read_units

MAX_GROUPS = 25
CODES_SHOWN = 5   # codes of one line (a code quotes a number of the answer or a span's name)
CODE_CHARS = 80
NOT_PASSING = ("fail", "needs_review", "inconclusive")


def _case(unit_id: str) -> str:
    case, channel, _ = split_unit_id(unit_id)
    return case if channel == "cli" else f"{case}.{channel}"


def _grouped(counts: Counter) -> list[str]:
    """One line per (case, description), with the number of its units when more than one."""
    lines = []
    for (case, text), n in counts.items():
        if len(lines) == MAX_GROUPS:
            return lines + [f"- … {len(counts) - MAX_GROUPS} more (diff.json)"]
        lines.append(f"- {inline(case, CODE_CHARS)}{f' ×{n}' if n > 1 else ''} {text}")
    return lines


def _codes(codes: list | None) -> str:
    return listing(codes or [], CODES_SHOWN, item_chars=CODE_CHARS)


def _change(u: dict) -> str:
    now = _codes(u.get("reasons")) or inline(u.get("verdict"), CODE_CHARS) or "gone"
    was = inline(u.get("baseline_verdict"), CODE_CHARS)
    was_codes = _codes(u.get("baseline_reasons"))
    before = f" (was {was}{' ' + was_codes if was_codes else ''})" if was else ""
    return f"{u['class']}: {now}{before}"


def _outcome(u: dict) -> str:
    return inline(u["verdict"], CODE_CHARS) + (f": {_codes(u['reasons'])}" if u.get("reasons") else "")


def changes(diff: dict | None) -> tuple[list[str], int]:
    """(lines, number of new fails) for the changes since the baseline (diff.json in memory)."""
    if diff is None:
        return [], 0
    return changes_of(diff, diff.get("units") or [])


def changes_of(head: dict, units: Iterable[dict]) -> tuple[list[str], int]:
    """``changes`` of a diff read a unit at a time: its keys but the units (``head``), then its units.
    Each unit is counted into its group as it comes; only the groups are kept."""
    if head.get("baseline") is None:
        bad: Counter = Counter()
        for u in units:
            if u.get("verdict") in NOT_PASSING:
                bad[(_case(u["unit_id"]), _outcome(u))] += 1
        head_line = "No baseline to compare with (the first finished run of these cases and filters)"
        return [head_line + (": what did not pass" if bad else ": every unit passed")] + _grouped(bad), 0
    by_class: dict[str, Counter] = {cls: Counter() for cls in SHOWN}
    new_fails = 0
    for u in units:
        cls = u["class"]
        new_fails += cls == "new_fail"
        if cls in by_class and (cls != "new_case" or u.get("verdict") in NOT_PASSING):
            by_class[cls][(_case(u["unit_id"]), _change(u))] += 1
    groups: Counter = Counter()
    for cls in [c for c in SHOWN if c != "new_case"] + ["new_case"]:
        groups.update(by_class[cls])
    lines = [f"Changes since {head['baseline']['run_id']}" + (":" if groups else ": none")]
    return lines + _grouped(groups), new_fails


def loss_statement(loss: dict | None, new_fails: int, fails: int) -> str | None:
    if not loss:
        return None
    found = loss.get("findings") or 0
    if found:
        rows = "; ".join(f"{r['partition']} × {r['category']} (delta {r['delta']:+.3g}, lower bound {r['ci_low']:+.3g})"
                         for r in (loss.get("top_findings") or [])[:3])
        return f"Loss layer: {found} provable regression(s) in TOP-REGRESSIONS.md: {rows}."
    if not loss.get("baseline"):
        return "Loss layer: this run is scored; with no baseline yet it can prove nothing either way."
    shown = new_fails or fails
    if shown:
        return (f"Loss layer: no regression is provable at this sample size; the {shown} {'new ' if new_fails else ''}"
                f"fail{'s are' if shown > 1 else ' is'} listed above.")
    return "Loss layer: no provable regression."


def chat_summary(outcome: dict, diff: dict | None) -> str:
    """The chat's text for a finished run; ``diff``: its diff.json in memory (None: it has none)."""
    return _text(outcome, changes(diff))


def chat_summary_of(outcome: dict, diff_path: Path | None) -> str:
    """``chat_summary`` with the run's diff.json read a unit at a time."""
    if diff_path is None or not Path(diff_path).exists():
        return _text(outcome, ([], 0))
    return _text(outcome, changes_of(*read_units(diff_path)))


def _text(outcome: dict, changed: tuple[list[str], int]) -> str:
    lines, new_fails = changed
    lines = list(lines)
    lines.append(f"Result: {outcome['summary_line']}")
    if outcome.get("not_asked_line"):
        lines.append(outcome["not_asked_line"][:1].upper() + outcome["not_asked_line"][1:] + ".")
    statement = loss_statement(outcome.get("loss"), new_fails, (outcome.get("summary") or {}).get("fail", 0))
    if statement:
        lines.append(statement)
    lines.append(f"Reports: {outcome['report_md']}" + (f" and {outcome['report_html']}" if outcome.get("report_html")
                                                       else ""))
    return "\n".join(lines)
