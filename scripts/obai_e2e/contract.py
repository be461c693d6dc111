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

from .errors import VerdictInvalid
from .schema import describe, pointer


@dataclass(frozen=True)
class Problem:
    """One way an answer breaks its contract."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer}: {self.message}"


@dataclass(frozen=True)
class RepairRule:
    """A repair allowed in exactly the situation ``applies`` recognises."""

    id: str
    applies: Callable[[dict, Any], bool]
    apply: Callable[[dict], dict]


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
    seen, unique = set(), []
    for p in out:
        if (p.pointer, p.message) not in seen:
            seen.add((p.pointer, p.message))
            unique.append(p)
    return unique


def accept(instance: Any, schema: dict, *, rules: list[RepairRule] = (), context: Any = None,
           what: str = "answer", hints: Callable[[Problem], str] | None = None) -> Accepted:
    if not isinstance(instance, dict):
        raise VerdictInvalid(f"{what} /: expected a JSON object, got {type(instance).__name__}")
    found = problems(instance, schema, hints)
    if not found:
        return Accepted(instance)
    matching = [r for r in rules if r.applies(instance, context)]
    if len(matching) == 1:
        repaired = matching[0].apply(copy.deepcopy(instance))
        if not problems(repaired, schema):
            return Accepted(repaired, {"rule": matching[0].id, "original": instance},
                            [str(p) for p in found])
    first = found[0]
    more = f" (and {len(found) - 1} more problem(s))" if len(found) > 1 else ""
    raise VerdictInvalid(f"{what} {first.pointer}: {first.message}{more}")
