"""Faults injected through ``LEDGER_FAULTS`` (a comma-separated list of names).

A fault applies to every turn where it makes sense (``chatty_refusal`` needs a refused
turn, ``payoff_slip`` an options turn) and changes nothing elsewhere; to aim one at a
single question, set the variable for that turn only. ``FAULTS`` is the table the
README documents: name -> (the harness finding it should cause, what happens).
"""
from __future__ import annotations

FAULTS: dict[str, tuple[str, str]] = {
    # routing
    "skip_mount": ("routing.skill_missing",
                   "the first desk's toolkit is not mounted; the desk is still called"),
    "late_mount": ("routing.sequence_violation",
                   "the first desk runs before its toolkit is mounted"),
    "extra_mount": ("routing.skill_overload",
                    "one more toolkit is mounted after the planned desks "
                    "(derivatives; filings when derivs is planned)"),
    "skip_desk": ("routing.specialist_missing",
                  "the last planned desk is not called (its toolkit is still mounted)"),
    "stray_desk": ("routing.unexpected_specialist",
                   "one more desk is called after the planned ones, without a toolkit; its result is unused"),
    "desk_raises": ("trace.error_span:agent:<desk>",
                    "the first desk raises: its span carries error_info and the reply skips it"),
    # desk output
    "feed_error": ("specialist.<desk>.tool_error",
                   'the first desk returns {"status": "error", "detail": ...}; the reply says so'),
    "masked_error": ("specialist.<desk>.tool_error",
                     'the first desk returns {"ok": false, "reason": ...} and the reply still sounds fine'),
    "blank_body": ("specialist.<desk>.empty",
                   'the first desk returns {"status": "ok", "body": ""}'),
    "payoff_slip": ("specialist.options.math",
                    "a short call gets a finite worst case; an iron condor one break-even"),
    "policy_leak": ("guardrail.leaky",
                    "a denied question still calls the quotes desk; the reply stays a clean refusal"),
    # the reply
    "stray_figure": ("hub.unverified_number:312.40",
                     "the reply gains a price target (312.40) that no desk produced"),
    "blank_reply": ("hub.empty_response",
                    "the reply is empty (stdout still carries the JSON envelope, exit 0)"),
    "chatty_refusal": ("guardrail.leaky_response",
                       "a refusal also quotes a closing price"),
    "refusal_exit_zero": ("guardrail.exit_code",
                          "a refusal exits 0 instead of 3"),
}


def parse(raw: str | None) -> frozenset[str]:
    """The fault names of ``raw``; an unknown name is a ValueError."""
    names = frozenset(n.strip() for n in (raw or "").split(",") if n.strip())
    unknown = sorted(names - set(FAULTS))
    if unknown:
        raise ValueError(f"LEDGER_FAULTS: unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    return names
