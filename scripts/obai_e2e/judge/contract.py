"""Validating what a judge hands in, with narrow, audited repair.

A contract is a JSON Schema that may depend on the context (the case, the packet). An
answer that breaks it is refused with the JSON pointer of the first problem and what is
required there — unless exactly one listed repair rule covers it: then the repaired
value must pass the schema, and the original, the repaired value and the rule id are
kept. Nothing missing is ever invented; a repair is idempotent (a repaired answer is
valid, so it is never repaired again).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from jsonschema import Draft202012Validator

from ..base.errors import VerdictInvalid
from ..base.schema import describe, pointer


@dataclass(frozen=True)
class Problem:
    """One way an answer breaks its contract."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer}: {self.message}"


@dataclass(frozen=True)
class RepairRule:
    """A repair allowed in exactly the situation ``applies`` recognises.

    ``apply`` gets the (copied) instance, and the context too when ``uses_context`` is
    set (a repair that depends on the packet it answers). ``locate`` may name the JSON
    pointers the repair changes; they are kept in the audit record.
    """

    id: str
    applies: Callable[[dict, Any], bool]
    apply: Callable[..., dict]
    uses_context: bool = False
    locate: Callable[[dict, Any], list[str]] | None = None

    def run(self, instance: dict, context: Any) -> dict:
        return self.apply(instance, context) if self.uses_context else self.apply(instance)


@dataclass
class Accepted:
    """An answer that passed its contract, possibly after one audited repair."""

    value: dict
    repair: dict | None = None
    problems_before: list[str] = field(default_factory=list)


def problems(instance: Any, schema: dict, hints: Callable[[Problem], str] | None = None) -> list[Problem]:
    """Every problem, deepest first within a pointer, in document order."""
    v = Draft202012Validator(schema)
    out = []
    for error in sorted(v.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), -len(e.absolute_path))):
        if error.validator in ("allOf", "if", "then"):
            continue
        p = Problem(pointer(error.absolute_path), describe(error))
        if hints:
            p = Problem(p.pointer, hints(p) or p.message)
        out.append(p)
    # "then" errors are reported through their own sub-errors; keep one per pointer/message.
    return distinct(out)


def distinct(found: list[Problem]) -> list[Problem]:
    """``found`` with each (pointer, message) once, in order."""
    return list(dict.fromkeys(found))


Check = Callable[[Any, Any], list[Problem]]


def all_problems(instance: Any, schema: dict, *, checks: Check | None = None, context: Any = None,
                 hints: Callable[[Problem], str] | None = None) -> list[Problem]:
    """Schema problems; when there are none, the problems ``checks`` finds (rules a schema cannot say)."""
    found = problems(instance, schema, hints)
    if found or checks is None:
        return found
    return checks(instance, context)


def accept(instance: Any, schema: dict, *, rules: list[RepairRule] = (), context: Any = None,
           what: str = "answer", hints: Callable[[Problem], str] | None = None,
           checks: Check | None = None) -> Accepted:
    """Accept ``instance`` as it is, or after exactly one listed repair; otherwise raise.

    ``checks(instance, context)`` adds problems beyond the schema (membership, duplicates);
    it only runs on instances the schema accepts. The raised :class:`VerdictInvalid`
    carries the pointer of the first problem as ``.pointer``.
    """
    if not isinstance(instance, dict):
        exc = VerdictInvalid(f"{what} /: expected a JSON object, got {type(instance).__name__}")
        exc.pointer = "/"
        raise exc
    found = all_problems(instance, schema, checks=checks, context=context, hints=hints)
    if not found:
        return Accepted(instance)
    matching = [r for r in rules if r.applies(instance, context)]
    if len(matching) == 1:
        rule = matching[0]
        repaired = rule.run(copy.deepcopy(instance), context)
        if not all_problems(repaired, schema, checks=checks, context=context):
            record = {"rule": rule.id, "original": instance}
            if rule.locate is not None:
                record["pointers"] = rule.locate(instance, context)
            return Accepted(repaired, record, [str(p) for p in found])
    first = found[0]
    more = f" (and {len(found) - 1} more problem(s))" if len(found) > 1 else ""
    exc = VerdictInvalid(f"{what} {first.pointer}: {first.message}{more}")
    exc.pointer = first.pointer
    raise exc
