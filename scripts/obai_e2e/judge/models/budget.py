"""The per-run token and cost budget.

Before a request is sent its worst case is reserved: the bundle's UTF-8 bytes divided by
``bytes_per_token`` (1 by default: a byte-level tokenizer never makes more tokens than
bytes) plus a small framing allowance, plus the judge's ``max_tokens``, priced at the
model's rates. It is sent only if what was spent, what is reserved for requests in
flight and its own worst case stay within the budget; the first request that does not
fit stops all further asking (``stopped`` says why). When a reply arrives its reported
usage replaces the reservation; a reply without usage keeps the estimate. Costs are
exact decimals (``Decimal``) from the prices per million tokens.

A command judge reports no usage: it is neither counted nor stopped by the budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from .config import Judge, PanelConfig
from .wire import Reply

FRAMING_TOKENS = 64
MILLION = Decimal(1_000_000)


def show(value: Decimal) -> str:
    """A decimal as people write it: 0.0224, 0, 12 (never 0E-6 or 1.2E+1)."""
    return format(value.normalize(), "f")


@dataclass(frozen=True)
class Usage:
    """Tokens of one call and what they cost (None when the model has no price)."""

    input_tokens: int
    output_tokens: int
    cost: Decimal | None
    source: str  # "reported" | "estimated" | "none"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost": None if self.cost is None else show(self.cost), "source": self.source}


@dataclass(frozen=True)
class Reservation:
    judge: str
    tokens: int
    cost: Decimal


class Ledger:
    """What the run has spent and reserved; used from one thread (the panel's scheduler)."""

    def __init__(self, cfg: PanelConfig, spent_tokens: int = 0, spent_cost: Decimal = Decimal(0)):
        self.cfg = cfg
        self.spent_tokens = spent_tokens
        self.spent_cost = spent_cost
        self.reserved_tokens = 0
        self.reserved_cost = Decimal(0)
        self.stopped: str | None = None

    def price(self, model: str, input_tokens: int, output_tokens: int) -> Decimal | None:
        p = self.cfg.prices.get(model)
        if p is None:
            return None
        return (p.input_per_mtok * input_tokens + p.output_per_mtok * output_tokens) / MILLION

    def worst_case(self, judge: Judge, text: str) -> Usage:
        tokens_in = math.ceil(Decimal(len(text.encode("utf-8"))) / self.cfg.budget.bytes_per_token) + FRAMING_TOKENS
        return Usage(tokens_in, judge.max_tokens, self.price(judge.model, tokens_in, judge.max_tokens), "estimated")

    def reserve(self, judge: Judge, text: str) -> Reservation | None:
        """Reserve the worst case of one request; None (and ``stopped`` set) when it does not fit."""
        if judge.provider == "command":
            return Reservation(judge.name, 0, Decimal(0))
        if self.stopped:
            return None
        b = self.cfg.budget
        worst = self.worst_case(judge, text)
        if b.max_tokens is not None:
            after = self.spent_tokens + self.reserved_tokens + worst.tokens
            if after > b.max_tokens:
                self.stopped = (f"token budget: {self.spent_tokens} spent and {self.reserved_tokens} reserved of "
                                f"{b.max_tokens}; a request to {judge.name} ({judge.model}) may take up to "
                                f"{worst.tokens} more")
                return None
        cost = worst.cost or Decimal(0)
        if b.max_cost is not None:
            after = self.spent_cost + self.reserved_cost + cost
            if after > b.max_cost:
                self.stopped = (f"cost budget: {show(self.spent_cost)} {b.currency} spent and "
                                f"{show(self.reserved_cost)} reserved of {show(b.max_cost)}; a request to {judge.name} "
                                f"({judge.model}) may cost up to {show(cost)} more")
                return None
        self.reserved_tokens += worst.tokens
        self.reserved_cost += cost
        return Reservation(judge.name, worst.tokens, cost)

    def settle(self, reservation: Reservation, judge: Judge, text: str, reply: Reply | None) -> Usage:
        """Replace a reservation by what the call used (nothing, when it got no reply)."""
        self.reserved_tokens -= reservation.tokens
        self.reserved_cost -= reservation.cost
        if judge.provider == "command":
            return Usage(0, 0, None, "none")
        if reply is None:
            return Usage(0, 0, Decimal(0) if judge.model in self.cfg.prices else None, "none")
        if reply.input_tokens is None or reply.output_tokens is None:
            worst = self.worst_case(judge, text)
            used = Usage(worst.input_tokens if reply.input_tokens is None else reply.input_tokens,
                         worst.output_tokens if reply.output_tokens is None else reply.output_tokens, None, "estimated")
        else:
            used = Usage(reply.input_tokens, reply.output_tokens, None, "reported")
        used = Usage(used.input_tokens, used.output_tokens,
                     self.price(judge.model, used.input_tokens, used.output_tokens), used.source)
        self.spent_tokens += used.tokens
        self.spent_cost += used.cost or Decimal(0)
        return used
