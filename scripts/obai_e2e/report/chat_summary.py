"""What the user reads in the chat when a run is finished: a few lines, each fact once.

Enters: what finishing returned (summary line, report paths, the loss layer's outcome)
and diff.json. Leaves: plain text — the changes since the baseline grouped by case (the
repeats of a case with the same outcome as one line with their count), the summary line,
the loss layer's statement in words that cannot be read as contradicting the fails, and
the report paths.
"""
from __future__ import annotations

from collections import Counter

from ..base.modeltext import inline, listing
from ..config.units import split_unit_id
from .diff import SHOWN

MAX_GROUPS = 25
CODES_SHOWN = 5   # codes of one line (a code quotes a number of the answer or a span's name)
CODE_CHARS = 80
NOT_PASSING = ("fail", "needs_review", "inconclusive")


def _case(unit_id: str) -> str:
    case, channel, _ = split_unit_id(unit_id)
    return case if channel == "cli" else f"{case}.{channel}"


def _grouped(items: list[dict], describe) -> list[str]:
    """One line per (case, description), with the number of its units when more than one."""
    counts = Counter((_case(u["unit_id"]), describe(u)) for u in items)
    lines = []
    for (case, text), n in counts.items():
        lines.append(f"- {inline(case, CODE_CHARS)}{f' ×{n}' if n > 1 else ''} {text}")
    if len(lines) > MAX_GROUPS:
        lines = lines[:MAX_GROUPS] + [f"- … {len(lines) - MAX_GROUPS} more (diff.json)"]
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
    """(lines, number of new fails) for the changes since the baseline."""
    if diff is None:
        return [], 0
    units = diff.get("units") or []
    if diff.get("baseline") is None:
        bad = [u for u in units if u.get("verdict") in NOT_PASSING]
        head = "No baseline to compare with (the first finished run of these cases and filters)"
        return [head + (": what did not pass" if bad else ": every unit passed")] + _grouped(bad, _outcome), 0
    shown = [u for cls in SHOWN if cls != "new_case" for u in units if u["class"] == cls]
    new_cases = [u for u in units if u["class"] == "new_case" and u.get("verdict") in NOT_PASSING]
    head = f"Changes since {diff['baseline']['run_id']}"
    lines = [head + (":" if shown or new_cases else ": none")]
    lines += _grouped(shown + new_cases, _change)
    return lines, sum(1 for u in units if u["class"] == "new_fail")


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
    lines, new_fails = changes(diff)
    lines.append(f"Result: {outcome['summary_line']}")
    if outcome.get("not_asked_line"):
        lines.append(outcome["not_asked_line"][:1].upper() + outcome["not_asked_line"][1:] + ".")
    statement = loss_statement(outcome.get("loss"), new_fails, (outcome.get("summary") or {}).get("fail", 0))
    if statement:
        lines.append(statement)
    lines.append(f"Reports: {outcome['report_md']}" + (f" and {outcome['report_html']}" if outcome.get("report_html")
                                                       else ""))
    return "\n".join(lines)
