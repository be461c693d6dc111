"""Units: one case in one run, once per repeat. Their ids name files in the run directory.

A case runs ``case.repeats`` times unless the run's sampling plan set another count
(``run.json`` → ``repeats``); a case that runs once has the unit id of the case
(``MD1``), a repeated one ``CASE.rK`` (``S1.r2``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from ..base.errors import UsageError
from .cases import Case, CaseSet

UNIT_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}(\.r[1-9][0-9]{0,2})?$")


@dataclass(frozen=True)
class Unit:
    """One execution of a case."""

    case: Case
    repeat: int
    total: int

    @property
    def id(self) -> str:
        return self.case.id if self.total == 1 else f"{self.case.id}.r{self.repeat}"


def repeats_for(case: Case, planned: Mapping[str, int] | None = None) -> int:
    """How often ``case`` runs: the run's planned count (run.json ``repeats``) or the case's own."""
    count = (planned or {}).get(case.id)
    return int(count) if count else case.repeats


def units_of(case: Case, planned: Mapping[str, int] | None = None, repeats: int | None = None) -> list[Unit]:
    total = repeats or repeats_for(case, planned)
    return [Unit(case, k, total) for k in range(1, total + 1)]


def check_unit_id(value: str) -> str:
    """Refuse ids that could leave the run directory or name a non-unit file."""
    if not isinstance(value, str) or not UNIT_ID.match(value):
        raise UsageError(
            f"invalid case id {value!r}: expected letters, digits, '_' or '-' (plus '.rN' for a repeat); "
            "no path characters")
    return value


def split_unit_id(value: str) -> tuple[str, int | None]:
    check_unit_id(value)
    if ".r" in value:
        case_id, rep = value.rsplit(".r", 1)
        return case_id, int(rep)
    return value, None


def resolve_unit(case_set: CaseSet, unit_id: str, planned: Mapping[str, int] | None = None) -> Unit:
    """The unit named ``unit_id`` (``CASE`` or ``CASE.rK``) of ``case_set``, checked against its repeats."""
    case_id, rep = split_unit_id(unit_id)
    case = case_set.by_id(case_id)
    total = repeats_for(case, planned)
    if rep is None:
        if total != 1:
            raise UsageError(f"case {case_id!r} runs {total} repeats; name one as {case_id}.r1 … {case_id}.r{total}")
        return Unit(case, 1, 1)
    if total == 1 or rep > total:
        raise UsageError(f"case {case_id!r} has no repeat {rep} (it runs {total})")
    return Unit(case, rep, total)
