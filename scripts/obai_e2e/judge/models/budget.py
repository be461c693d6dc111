"""The per-run token and cost budget.

Before a request is sent its worst case is reserved: the UTF-8 bytes of the bundle and
of the framing the wire adds, divided by ``bytes_per_token`` (1 by default: a byte-level
tokenizer never makes more tokens than bytes), plus a small allowance for the message
structure, plus the judge's ``max_tokens``, priced at the model's rates. It is sent only
if what was spent, what is reserved for requests in flight and its own worst case stay
within the budget; the first request that does not fit stops all further asking
(``stopped`` says why).

When a reply arrives its reported usage replaces the reservation; a reply without usage
keeps the estimate. An attempt that timed out or lost its connection after the request
was sent may be billed all the same: it is charged its reservation (the request's
prompt tokens + ``max_tokens``), and a retry after it needs a reservation of its own. A
failure the server answered (a 4xx or 5xx status) costs nothing. Costs are exact
decimals (``Decimal``) from the prices per million tokens.

A command judge reports no usage: it is neither counted nor stopped by the budget. The
ledger is shared by the threads that ask, so every change holds its lock.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from decimal import Decimal

from .config import Judge, PanelConfig
from .wire import WRAPPER_BYTES, Reply

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
    source: str  # "reported" | "estimated" | "reserved" (a billable failure) | "none"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost": None if self.cost is None else show(self.cost), "source": self.source}


@dataclass
class Reservation:
    """What one request holds: the worst case of its current attempt, and what its billable failures cost."""

    judge: str
    tokens: int
    cost: Decimal
    charged: list = field(default_factory=list)  # Usage of each billable attempt that failed


class Ledger:
    """What the run has spent and reserved."""

    def __init__(self, cfg: PanelConfig, spent_tokens: int = 0, spent_cost: Decimal = Decimal(0)):
        self.cfg = cfg
        self.spent_tokens = spent_tokens
        self.spent_cost = spent_cost
        self.reserved_tokens = 0
        self.reserved_cost = Decimal(0)
        self.stopped: str | None = None
        self._lock = threading.Lock()

    def price(self, model: str, input_tokens: int, output_tokens: int) -> Decimal | None:
        p = self.cfg.prices.get(model)
        if p is None:
            return None
        return (p.input_per_mtok * input_tokens + p.output_per_mtok * output_tokens) / MILLION

    def worst_case(self, judge: Judge, text: str) -> Usage:
        size = len(text.encode("utf-8")) + WRAPPER_BYTES
        tokens_in = math.ceil(Decimal(size) / self.cfg.budget.bytes_per_token) + FRAMING_TOKENS
        return Usage(tokens_in, judge.max_tokens, self.price(judge.model, tokens_in, judge.max_tokens), "estimated")

    def reserve(self, judge: Judge, text: str) -> Reservation | None:
        """Reserve the worst case of one request; None (and ``stopped`` set) when it does not fit."""
        if judge.provider == "command":
            return Reservation(judge.name, 0, Decimal(0))
        with self._lock:
            worst = self._admit(judge, text)
            return None if worst is None else Reservation(judge.name, worst.tokens, worst.cost or Decimal(0))

    def _admit(self, judge: Judge, text: str) -> Usage | None:
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
        return worst

    def _charge(self, reservation: Reservation, judge: Judge, text: str) -> Usage:
        """Spend the reservation of a billable failed attempt (the lock held)."""
        self.reserved_tokens -= reservation.tokens
        self.reserved_cost -= reservation.cost
        worst = self.worst_case(judge, text)
        used = Usage(worst.input_tokens, worst.output_tokens, worst.cost, "reserved")
        self.spent_tokens += used.tokens
        self.spent_cost += used.cost or Decimal(0)
        reservation.tokens, reservation.cost = 0, Decimal(0)
        reservation.charged.append(used)
        return used

    def retry(self, reservation: Reservation, judge: Judge, text: str, attempt: dict) -> bool:
        """Before another attempt of a request: charge a billable failed ``attempt`` and reserve anew.

        False (and ``stopped`` set) when the next attempt's worst case does not fit.
        """
        if judge.provider == "command" or not attempt.get("billable"):
            return True
        with self._lock:
            self._charge(reservation, judge, text)
            attempt["charged"] = True
            worst = self._admit(judge, text)
            if worst is None:
                return False
            reservation.tokens, reservation.cost = worst.tokens, worst.cost or Decimal(0)
            return True

    def settle(self, reservation: Reservation, judge: Judge, text: str, reply: Reply | None,
               last_attempt: dict | None = None) -> Usage:
        """Replace a reservation by what the request used: its reply's usage, or the reservation of a
        billable last attempt, plus what its earlier billable attempts were charged."""
        if judge.provider == "command":
            return Usage(0, 0, None, "none")
        with self._lock:
            if reply is None and last_attempt is not None and last_attempt.get("billable") \
                    and not last_attempt.get("charged"):
                self._charge(reservation, judge, text)
                last_attempt["charged"] = True
            self.reserved_tokens -= reservation.tokens
            self.reserved_cost -= reservation.cost
            reservation.tokens, reservation.cost = 0, Decimal(0)
            used = self._used(judge, text, reply)
            self.spent_tokens += used.tokens
            self.spent_cost += used.cost or Decimal(0)
        return used

    def _used(self, judge: Judge, text: str, reply: Reply | None) -> Usage:
        if reply is None:
            return Usage(0, 0, Decimal(0) if judge.model in self.cfg.prices else None, "none")
        if reply.input_tokens is None or reply.output_tokens is None:
            worst = self.worst_case(judge, text)
            used = Usage(worst.input_tokens if reply.input_tokens is None else reply.input_tokens,
                         worst.output_tokens if reply.output_tokens is None else reply.output_tokens, None, "estimated")
        else:
            used = Usage(reply.input_tokens, reply.output_tokens, None, "reported")
        return Usage(used.input_tokens, used.output_tokens,
                     self.price(judge.model, used.input_tokens, used.output_tokens), used.source)
