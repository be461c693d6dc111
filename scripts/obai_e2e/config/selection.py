"""Which cases a run drives: the user's filters (smoke, feature, id) applied to a case set."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..base.errors import UsageError
from .cases import CHANNELS, Case, CaseSet


@dataclass(frozen=True)
class Filters:
    """What the user asked to run."""

    smoke: bool = False
    features: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    """Only units on these channels (all of a case's channels when empty)."""

    def to_json(self) -> dict:
        out = {"smoke": self.smoke, "features": list(self.features), "ids": list(self.ids)}
        if self.channels:
            out["channels"] = list(self.channels)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Filters":
        return cls(bool(data.get("smoke")), tuple(data.get("features", [])), tuple(data.get("ids", [])),
                   tuple(data.get("channels", [])))

    def apply(self, case_set: CaseSet) -> "Selection":
        unknown = [c for c in self.channels if c not in CHANNELS]
        if unknown:
            raise UsageError(f"unknown channel(s): {', '.join(unknown)}; known: {', '.join(CHANNELS)}")
        selection = select(case_set, smoke=self.smoke, features=self.features, ids=self.ids)
        if not self.channels:
            return selection
        return Selection(tuple(c for c in selection.cases if set(c.channels) & set(self.channels)),
                         selection.skipped_disabled, self.channels)


@dataclass(frozen=True)
class Selection:
    """The cases a run will drive, and the disabled ones it skipped."""

    cases: tuple[Case, ...]
    skipped_disabled: tuple[Case, ...]
    channels: tuple[str, ...] = ()
    """The channels the units are limited to (all when empty)."""

    def disabled_line(self) -> str | None:
        if not self.skipped_disabled:
            return None
        ids = ", ".join(c.id for c in self.skipped_disabled)
        return f"skipped {len(self.skipped_disabled)} disabled cases: {ids}"


def select(case_set: CaseSet, *, smoke: bool = False, features: Iterable[str] = (),
           ids: Iterable[str] = ()) -> Selection:
    """Apply the filters. A disabled case runs only when named by id."""
    features = [f for f in features if f]
    ids = [i for i in ids if i]
    known_ids = set(case_set.ids())
    unknown = [i for i in ids if i not in known_ids]
    if unknown:
        raise UsageError(f"unknown case id(s): {', '.join(unknown)} (not in {case_set.path})")
    known_features = {c.feature for c in case_set.cases}
    bad_features = [f for f in features if f not in known_features]
    if bad_features:
        raise UsageError(
            f"unknown feature(s): {', '.join(bad_features)}; known: {', '.join(sorted(known_features))}")
    chosen, skipped = [], []
    for case in case_set.cases:
        if ids and case.id not in ids:
            continue
        if smoke and not case.smoke:
            continue
        if features and case.feature not in features:
            continue
        if case.disabled and case.id not in ids:
            skipped.append(case)
            continue
        chosen.append(case)
    return Selection(cases=tuple(chosen), skipped_disabled=tuple(skipped))
