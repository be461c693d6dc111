"""What a mechanical verdict says about the questions a judge panel left undecided for a unit, and why."""
from __future__ import annotations

# The answer questions whose tripped majority becomes the unit's soft code, in the order they are named.
PANEL_CODES = ("hub.incomplete_answer", "hub.unfaithful_answer")


def undecided_note(panel: dict) -> str:
    """`` <question> stays undecided: …`` for each question the panel applied and decided nothing on."""
    questions = panel.get("questions") or {}
    open_ = [f for f, q in questions.items() if q.get("applies") is not False and not q.get("decided")]
    if not open_:
        return ""
    outcomes = panel.get("outcomes") or {}
    size = int(panel.get("panel_size") or len(outcomes) or 0)
    voters = panel.get("judges") or []
    notes = []
    for feeds in sorted(open_, key=lambda f: (f not in PANEL_CODES, f)):
        q = questions[feeds]
        no_vote = q.get("no_vote") or {}
        votes = ", ".join(f"{k} {v}" for k, v in sorted((q.get("votes") or {}).items()))
        silent = len(no_vote) + max(0, size - len(voters))  # refused entries, and judges with no response
        named = sorted(set(no_vote) | (set(outcomes) - set(voters)))
        who = ", ".join(f"{j} {_silent_why(outcomes.get(j), no_vote.get(j))}" for j in named)
        if not votes and silent and silent >= size:
            why = "no judge of the panel gave a vote" + (f" ({who})" if who else "")
        else:
            why = f"no majority of the judge panel ({votes or 'no vote'}"
            if silent:
                why += f"; {silent} of {size} judges without a vote" + (f": {who}" if who else "")
            why += ")"
        notes.append(f" {feeds} stays undecided: {why}.")
    return "".join(notes)


_NO_VOTE = {"parse_failed": "not JSON", "refused": "entry refused", "absent": "no entry"}


def _silent_why(outcome: str | None, no_vote: str | None) -> str:
    """A judge's outcome when it gave no vote at all, else why its entry for this packet holds none."""
    if outcome not in (None, "answered"):
        return outcome
    return _NO_VOTE.get(no_vote, no_vote or "no vote")
