"""When a failed request is asked again, and after how long.

Retried: 408, 409, 429 and every 5xx status (Anthropic's 529 "overloaded" among them),
timeouts and broken connections. Not retried: other 4xx statuses, and a 429 whose error
code says the quota or spend limit is used up (waiting does not help). The wait is the
server's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) when it sends
one — never less — and otherwise an exponential backoff, half of it randomised.
"""
from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from .config import Retry

RETRY_STATUSES = frozenset({408, 409, 429})


def retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


def retry_after(headers, now: datetime | None = None) -> float | None:
    """Seconds the server asks us to wait, from ``retry-after-ms`` or ``Retry-After``; None when absent."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def backoff(policy: Retry, attempt: int, rng: random.Random | None = None) -> float:
    """The wait after failed attempt ``attempt`` (1-based) when the server named none."""
    base = min(policy.max_backoff_s, policy.initial_backoff_s * policy.multiplier ** (attempt - 1))
    if not policy.jitter:
        return base
    return base / 2 + (rng or random).uniform(0, base / 2)
