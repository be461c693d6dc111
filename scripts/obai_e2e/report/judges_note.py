"""What the header of report.md and report.html says about the run's judge panel.

From results.json's ``judges`` block: how many judges answered, why each one without a
vote has none, what stayed undecided (a question decided for no unit makes the run
inconclusive), and the budget — what was spent against which limit, and its stop. A
panel that answered in full within its budget gets one line; one that did not is a
warning that names each problem.
"""
from __future__ import annotations


def incomplete(judges: dict | None) -> bool:
    """The panel left something out: a judge without a vote, a budget stop, or a question decided for no unit."""
    if not judges:
        return False
    if judges.get("left_undecided"):
        return True
    if "complete" in judges:
        return not judges["complete"]
    return any(not j.get("answered", True) for j in judges.get("judges") or [])  # a block of an older run


def headline(judges: dict) -> str:
    """One sentence: who answered, and the consequence when something is missing."""
    size = judges.get("panel_size") or len(judges.get("judges") or [])
    answered = judges.get("answered", sum(1 for j in judges.get("judges") or [] if j.get("answered")))
    text = f"Judge panel (round {judges.get('round')}): {answered} of {size} judges answered"
    left = judges.get("left_undecided") or []
    undecided = len(judges.get("undecided") or [])
    if left:
        text += f"; decided for no unit: {', '.join(left)} — the run is inconclusive"
    elif undecided:
        text += f"; {undecided} question{'s' if undecided != 1 else ''} undecided"
    return text + "."


def details(judges: dict) -> list[str]:
    """Each judge without a vote and why, then the budget."""
    out = []
    for j in judges.get("judges") or []:
        if j.get("outcome", "answered" if j.get("answered") else "failed") != "answered":
            model = f" ({j['model']})" if j.get("model") else ""
            out.append(f"{j.get('name')}{model}: {j.get('outcome', 'failed')} — {j.get('reason') or 'no answer'}")
    budget = budget_line(judges)
    if budget:
        out.append(budget)
    return out


def budget_line(judges: dict) -> str | None:
    b = judges.get("budget")
    if not b:
        return None
    currency = b.get("currency") or ""
    spent = f"{b['spent_tokens']:,} tokens"
    if b.get("max_tokens") is not None:
        spent += f" of {b['max_tokens']:,}"
    spent += f", {b['spent_cost']} {currency}".rstrip()
    if b.get("max_cost") is not None:
        spent += f" of {b['max_cost']} {currency}".rstrip()
    text = f"Budget: {spent} spent"
    if b.get("charged_attempts"):
        text += (f" ({b['charged_attempts']} timed-out or cut-off attempt(s) counted at their reservation, "
                 f"{b['charged_tokens']:,} tokens)")
    if b.get("stopped"):
        text += f"; stopped: {b['stopped']} — the questions it left unasked stay undecided"
    return text + "."
