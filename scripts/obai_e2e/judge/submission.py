"""Everything wrong with a verdict a judge submits, all at once.

The same checks as recording a single verdict (judge/verdict: the case's contract, the
mechanical hard failure that needs an override, a soft code left out without a reason, the
panel's decided majority), plus the
judge's word on every open question (judge/open_questions), gathered into one list of
problems, each with its JSON pointer, instead of stopping at the first.
"""
from __future__ import annotations

from ..base.errors import VerdictInvalid
from ..config.target import TargetConfig
from ..config.units import Unit
from .contract import Problem, distinct
from .open_questions import answer_problems
from .rubric.check import CheckResult
from .dropped import check_dropped
from .verdict import check_override, check_panel, contract_problems

VERDICTS = ("pass", "fail", "needs_review", "inconclusive")


def _as_problem(exc: VerdictInvalid) -> Problem:
    """``verdict /override: …`` as a problem at ``/override``."""
    text = str(exc)
    head, _, message = text.partition(": ")
    where = head.split(" ", 1)[1] if head.startswith("verdict /") else "/"
    return Problem(where, message or text)


def problems(value: object, unit: Unit, config: TargetConfig, check: CheckResult, panel: dict | None) -> list[Problem]:
    """Every problem of ``value`` as the verdict of ``unit``; an empty list means it may be recorded."""
    found = contract_problems(value, unit.case, config, unit.id)
    if not isinstance(value, dict):
        return found
    # The override and the panel's majority concern what a well-formed verdict says: they are
    # checked once the contract holds (a reason that is no code would only repeat as theirs).
    if not found and value.get("verdict") in VERDICTS:
        mechanical = {"verdict": check.verdict, "reasons": check.reasons}
        for rule in (lambda: check_override(value, mechanical), lambda: check_dropped(value, mechanical),
                     lambda: check_panel(value, panel)):
            try:
                rule()
            except VerdictInvalid as exc:
                found.append(_as_problem(exc))
    return distinct(found + answer_problems(value, check, panel))


def message(found: list[Problem]) -> str:
    """All problems in one message: ``verdict /reasons/0: …; /answers/…: …``."""
    return "verdict " + "; ".join(str(p) for p in found)
