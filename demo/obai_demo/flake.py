"""Seeded soft deviations (``OBAI_DEMO_FLAKE=seed[:rate]``) for the loss layer's variance.

Per turn, a generator seeded from (seed, query, correlation tag or session) decides with
probability ``rate`` to add one soft deviation: an extra ungrounded number in the answer
or an extra specialist call. The same inputs always give the same decision.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable

DEFAULT_RATE = 0.3
KINDS = ("extra_number", "extra_specialist")


@dataclass(frozen=True)
class FlakeConfig:
    """The parsed ``OBAI_DEMO_FLAKE`` value."""

    seed: str
    rate: float = DEFAULT_RATE


@dataclass(frozen=True)
class Deviation:
    """The deviation chosen for one turn."""

    kind: str
    draw: int
    """A seeded integer the extra number is derived from."""

    def number(self, taken: Iterable[Decimal]) -> str:
        """A two-decimal number in [100, 1000) that none of ``taken`` equals."""
        excluded = set(taken)
        value = self.draw
        while True:
            text = f"{100 + value % 90000 / 100:.2f}"
            if Decimal(text) not in excluded:
                return text
            value += 7919


def parse(value: str | None) -> FlakeConfig | None:
    """``seed`` or ``seed:rate`` (rate in [0, 1]); empty means no flake."""
    if not value or not value.strip():
        return None
    seed, sep, rate_text = value.strip().partition(":")
    if not seed:
        raise ValueError("OBAI_DEMO_FLAKE needs a seed: seed[:rate]")
    rate = DEFAULT_RATE
    if sep:
        try:
            rate = float(rate_text)
        except ValueError:
            raise ValueError(f"OBAI_DEMO_FLAKE rate {rate_text!r} is not a number") from None
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"OBAI_DEMO_FLAKE rate {rate} is outside [0, 1]")
    return FlakeConfig(seed, rate)


def decide(config: FlakeConfig | None, query: str, key: str) -> Deviation | None:
    """The deviation for the turn (``key`` is the correlation tag, else the session)."""
    if config is None:
        return None
    digest = hashlib.sha256("\x1f".join([config.seed, query, key]).encode("utf-8")).digest()
    rng = random.Random(int.from_bytes(digest[:16], "big"))
    if rng.random() >= config.rate:
        return None
    return Deviation(kind=rng.choice(KINDS), draw=rng.randrange(1 << 30))
