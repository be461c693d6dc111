"""What a draft decided, and where each decision came from: the records the adopt stages pass on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Choice:
    """One value of the draft and the span (or trace) it was read from."""

    key: str          # where it goes in target.yaml, e.g. vocabulary.guardrail_span
    value: Any
    source: str       # the span or trace it came from, for the comment beside it

    def to_json(self) -> dict:
        return {"key": self.key, "value": self.value, "from": self.source}


@dataclass(frozen=True)
class Undecided:
    """Something the traces could not tell, and what to do about it."""

    key: str
    why: str
    next_step: str

    def to_json(self) -> dict:
        return {"key": self.key, "why": self.why, "next_step": self.next_step}


@dataclass
class Findings:
    """Every choice and every open question of one draft."""

    choices: dict[str, Choice] = field(default_factory=dict)
    undecided: list[Undecided] = field(default_factory=list)

    def choose(self, key: str, value: Any, source: str) -> None:
        self.choices[key] = Choice(key, value, source)

    def leave(self, key: str, why: str, next_step: str) -> None:
        self.undecided.append(Undecided(key, why, next_step))

    def get(self, key: str, default: Any = None) -> Any:
        c = self.choices.get(key)
        return c.value if c is not None else default
