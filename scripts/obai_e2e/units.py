"""Units: one case in one run, once per repeat. Their ids name files in the run directory."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .cases import Case
from .errors import UsageError

UNIT_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}(\.r[1-9][0-9]{0,2})?$")


@dataclass(frozen=True)
class Unit:
    """One execution of a case: ``MD1`` for a single run, ``S1.r2`` for the second repeat."""

    case: Case
    repeat: int

    @property
    def id(self) -> str:
        return self.case.id if self.case.repeats == 1 else f"{self.case.id}.r{self.repeat}"


def units_of(case: Case) -> list[Unit]:
    return [Unit(case, k) for k in range(1, case.repeats + 1)]


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


def resolve_unit(case_set, unit_id: str) -> Unit:
    case_id, rep = split_unit_id(unit_id)
    case = case_set.by_id(case_id)
    if rep is None:
        if case.repeats != 1:
            raise UsageError(f"case {case_id!r} runs {case.repeats} repeats; name one as {case_id}.r1 … {case_id}.r{case.repeats}")
        return Unit(case, 1)
    if case.repeats == 1 or rep > case.repeats:
        raise UsageError(f"case {case_id!r} has no repeat {rep} (it runs {case.repeats})")
    return Unit(case, rep)
