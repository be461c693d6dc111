"""Units: one case in one run, on one channel, once per repeat. Their ids name files in the run directory.

A case runs ``case.repeats`` times unless the run's sampling plan set another count
(``run.json`` → ``repeats``); a case that runs once has the unit id of the case
(``MD1``), a repeated one ``CASE.rK`` (``S1.r2``). On the ui channel the id gains
``.ui`` after the case id (``MD1.ui``, ``S1.ui.r2``); the cli channel keeps the plain id.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from ..base.errors import UsageError
from .cases import CLI, Case, CaseSet

UNIT_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}(\.ui)?(\.r[1-9][0-9]{0,2})?$")


@dataclass(frozen=True)
class Unit:
    """One execution of a case."""

    case: Case
    repeat: int
    total: int
    channel: str = CLI

    @property
    def key(self) -> str:
        """The case on its channel: what the loss layer calls a unit (repeats average inside it)."""
        return unit_key(self.case.id, self.channel)

    @property
    def id(self) -> str:
        return self.key if self.total == 1 else f"{self.key}.r{self.repeat}"


def unit_key(case_id: str, channel: str | None) -> str:
    """``MD1`` on the cli channel (or a unit from before channels existed), ``MD1.ui`` on another."""
    return case_id if channel in (None, CLI) else f"{case_id}.{channel}"


def repeats_for(case: Case, planned: Mapping[str, int] | None = None) -> int:
    """How often ``case`` runs: the run's planned count (run.json ``repeats``) or the case's own."""
    count = (planned or {}).get(case.id)
    return int(count) if count else case.repeats


def units_of(case: Case, planned: Mapping[str, int] | None = None, repeats: int | None = None,
             channels: tuple[str, ...] = ()) -> list[Unit]:
    """The case's units: each of its channels (only those in ``channels`` when given), each repeat."""
    total = repeats or repeats_for(case, planned)
    return [Unit(case, k, total, ch) for ch in case.channels if not channels or ch in channels
            for k in range(1, total + 1)]


def check_unit_id(value: str) -> str:
    """Refuse ids that could leave the run directory or name a non-unit file."""
    if not isinstance(value, str) or not UNIT_ID.match(value):
        raise UsageError(
            f"invalid case id {value!r}: expected letters, digits, '_' or '-' (plus '.ui' for the ui channel and "
            "'.rN' for a repeat); no path characters")
    return value


def split_unit_id(value: str) -> tuple[str, str, int | None]:
    """(case id, channel, repeat or None) of a unit id."""
    check_unit_id(value)
    rep = None
    if ".r" in value:
        value, text = value.rsplit(".r", 1)
        rep = int(text)
    if value.endswith(".ui"):
        return value[:-3], "ui", rep
    return value, CLI, rep


def resolve_unit(case_set: CaseSet, unit_id: str, planned: Mapping[str, int] | None = None) -> Unit:
    """The unit named ``unit_id`` (``CASE[.ui]`` or ``CASE[.ui].rK``) of ``case_set``, checked against it."""
    case_id, channel, rep = split_unit_id(unit_id)
    case = case_set.by_id(case_id)
    if channel not in case.channels:
        raise UsageError(f"case {case_id!r} does not run on the {channel} channel (its channels: "
                         f"{', '.join(case.channels)})")
    total = repeats_for(case, planned)
    key = unit_key(case_id, channel)
    if rep is None:
        if total != 1:
            raise UsageError(f"case {case_id!r} runs {total} repeats; name one as {key}.r1 … {key}.r{total}")
        return Unit(case, 1, 1, channel)
    if total == 1 or rep > total:
        raise UsageError(f"case {case_id!r} has no repeat {rep} (it runs {total})")
    return Unit(case, rep, total, channel)
