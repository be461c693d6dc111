"""Soft codes a verdict leaves out: the mechanical check tripped them, the judge must say why they do not hold.

The counterpart of an override for a hard failure (judge/verdict.check_override): a verdict that
leaves out a soft code without a reason is refused, with the JSON pointer and what to write.
"""
from __future__ import annotations

from ..base.errors import VerdictInvalid
from ..base.schema import pointer


def check_dropped(value: dict, mechanical: dict) -> None:
    """Refuse a verdict that leaves out a soft code the mechanical check tripped without saying why.

    A pass or needs_review keeps each such code in /reasons, or drops it with a reason: an answer
    ``dismissed`` to its ``hub.unverified_number`` question, or an entry in /dropped (code → why it
    does not hold). /dropped names only codes the check tripped and the verdict leaves out.
    """
    tripped = list(mechanical.get("reasons") or []) if mechanical["verdict"] == "needs_review" else []
    dropped = value.get("dropped") or {}
    reasons = value.get("reasons") or []
    if value["verdict"] in ("pass", "needs_review"):
        answers = value.get("answers") or {}
        for code in tripped:
            if code in reasons or code in dropped or code in answers:  # an answer: judge/open_questions checks it
                continue
            also = " (or answer dismissed to its question in /answers)" if code.startswith("hub.unverified_number:") else ""
            raise VerdictInvalid(
                f"verdict /reasons: the mechanical check tripped the soft code {code}; keep it in /reasons, or "
                f"leave it out with a reason: \"dropped\": {{\"{code}\": \"why it does not hold\"}}{also}")
    elif dropped:
        raise VerdictInvalid(f"verdict /dropped: a {value['verdict']} verdict drops no soft code; remove /dropped")
    for code in dropped:
        if code not in tripped or code in reasons:
            where = pointer(("dropped", code))
            why = "it is still in /reasons" if code in reasons else (
                f"the mechanical check did not trip it (it tripped: {', '.join(tripped) or 'no soft code'})")
            raise VerdictInvalid(f"verdict {where}: {code} cannot be dropped: {why}")
