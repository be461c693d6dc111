"""Timestamps, ids and project ids in the forms Opik uses.

Enters: timestamps and ids as clients send them. Leaves: fixed-width UTC timestamp text
that sorts as it reads, canonical UUID text, or a 400 naming the field.
"""
from __future__ import annotations

import functools
import os
import re
import time
import uuid
from datetime import datetime, timezone

from .apierror import bad_request

# Project ids are derived from the project name so that they are stable across restarts
# and identical for every process that asks.
_PROJECT_NAMESPACE = uuid.UUID("6f2b8a52-4d1e-5c7a-9e3b-0b1d2c3e4f50")

DEFAULT_PROJECT = "Default Project"


def parse_ts(value: object, what: str) -> datetime:
    """An ISO-8601 timestamp as an aware UTC datetime; a naive one is taken as UTC.

    Numbers are epoch seconds (milliseconds above 2e10), as the SDK's models read them.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            seconds = value / 1000 if abs(value) > 2e10 else value
            return datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise bad_request(f"{what} is out of range as a timestamp: {value!r:.120}") from None
    if not isinstance(value, str):
        raise bad_request(f"{what} must be an ISO-8601 timestamp string, got {type(value).__name__}")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise bad_request(
            f"{what} is not an ISO-8601 timestamp: {value!r:.120} (expected e.g. 2026-01-01T00:00:00Z)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        raise bad_request(f"{what} is out of range as a timestamp: {value!r:.120}") from None


def fmt_ts(moment: datetime) -> str:
    """Fixed-width UTC form, e.g. ``2026-11-29T18:05:19.228375Z``; sorts as text."""
    u = moment.astimezone(timezone.utc)
    return (f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}."
            f"{u.microsecond:06d}Z")


# A stamp already in the fixed form (as the SDK and most writers send it) is taken as it is.
_FIXED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def norm_ts(value: object, what: str) -> str:
    if isinstance(value, str) and _FIXED.fullmatch(value):
        try:
            datetime.fromisoformat(value)  # still a real moment (no 2026-02-30)
            return value
        except ValueError:
            pass  # parse_ts names what is wrong
    return fmt_ts(parse_ts(value, what))


def now_ts() -> str:
    return fmt_ts(datetime.now(timezone.utc))


def duration_ms(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:  # a stamp stored by an older store in another form
        return None
    return delta.total_seconds() * 1000.0


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def parse_uuid(value: object, what: str, *, version7: bool = False) -> str:
    """A UUID in canonical lower-case form; ``version7`` refuses other versions as Opik does."""
    if not isinstance(value, str):
        raise bad_request(f"{what} must be a UUID string, got {type(value).__name__}")
    if _CANONICAL_UUID.fullmatch(value) and (not version7 or (value[14] == "7" and value[19] in "89ab")):
        return value  # already canonical, as every SDK sends ids
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        raise bad_request(f"{what} is not a UUID: {value!r:.120}") from None
    if version7 and parsed.version != 7:
        raise bad_request(f"{what} must be a version 7 UUID (time-ordered), got version {parsed.version}: {value}")
    return str(parsed)


def new_uuid7() -> str:
    """A fresh UUIDv7: 48-bit millisecond timestamp, version and variant bits, random rest."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def uuid7_bound(moment: datetime, *, upper: bool) -> str:
    """The smallest (or largest) UUIDv7 of ``moment``'s millisecond: ids sort by creation time, so a
    time range is an id range. Before 1970 is clamped to the epoch, as Opik's InstantToUUIDMapper does."""
    millis = max(0, int(moment.timestamp() * 1000)) & ((1 << 48) - 1)
    value = millis << 80 | 0x7 << 76 | 0b10 << 62
    if upper:
        value |= 0xFFF << 64 | ((1 << 62) - 1)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@functools.lru_cache(maxsize=1024)
def project_id_for(name: str) -> str:
    """The id of the project named ``name``; Opik's project names ignore case, so this does too."""
    return str(uuid.uuid5(_PROJECT_NAMESPACE, name.lower()))
