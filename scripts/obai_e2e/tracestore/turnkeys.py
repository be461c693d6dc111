"""Turn keys: the credentials a turn writes its traces with, and who a request's key names.

Enters: the store's token (the harness mints with it, the server verifies with it) and the
``Authorization`` a request carries. Leaves: a turn key (``obai-turn.<unit>.<turn>.<mac>``)
or the :class:`Principal` a key names, or None for a key the store did not issue.

A turn key is signed, not registered: its MAC is an HMAC-SHA256, under a secret derived
from the store's token, of the unit and turn it names, so the store checks it without the
harness telling it about the turn first. A key from a previous start of the store fails,
as the token does. The store's own token names the harness, which may do everything; a
turn key names one turn of one unit (two turns of an async unit share the unit part).
"""
from __future__ import annotations

import hashlib
import hmac
import re
import threading
from dataclasses import dataclass

PREFIX = "obai-turn"
HARNESS_NAME = "obai-harness"
_PART = re.compile(r"[0-9a-f]{16}")
_MAC_HEX = 32
CACHE_SIZE = 4096


@dataclass(frozen=True)
class Principal:
    """Who wrote: the harness (the store's token) or one turn (a turn key)."""

    name: str
    """What the store records as ``created_by`` / ``last_updated_by``."""
    unit: str | None = None
    """The unit part of a turn key (None for the harness): the scope of a turn's reads."""

    @property
    def is_turn(self) -> bool:
        return self.unit is not None


HARNESS = Principal(HARNESS_NAME)


def _signing_key(token: str) -> bytes:
    return hmac.new(token.encode("utf-8"), b"obai-trace-store turn keys", hashlib.sha256).digest()


def _mac(secret: bytes, unit: str, turn: str) -> str:
    return hmac.digest(secret, f"{unit}.{turn}".encode("ascii"), "sha256").hex()[:_MAC_HEX]


def part(label: str) -> str:
    """The 16 hex digits a label (the unit's session, the turn's tag) stands for in a key."""
    return hashlib.sha256(label.encode("utf-8")).hexdigest()[:16]


def writer_name(unit: str, turn: str) -> str:
    """The ``created_by`` of what a turn key of these parts writes."""
    return f"turn:{unit}.{turn}"


@dataclass(frozen=True)
class TurnKey:
    """A minted key and the name its writes carry."""

    key: str
    writer: str


def mint(token: str, unit_label: str, turn_label: str) -> TurnKey:
    """The key of one turn (``turn_label``) of one unit (``unit_label``), signed with the store's token."""
    unit, turn = part(unit_label), part(turn_label)
    return TurnKey(f"{PREFIX}.{unit}.{turn}.{_mac(_signing_key(token), unit, turn)}", writer_name(unit, turn))


class KeyCheck:
    """The server's side: who a key names, each turn key's MAC checked once and then remembered."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")
        self._secret = _signing_key(token)
        # The token itself is looked up like a checked key: a dict lookup tells nothing of a wrong key's bytes.
        self._known: dict[str, Principal] = {token: HARNESS}
        self._lock = threading.Lock()

    def principal(self, given: str) -> Principal | None:
        """The principal ``given`` names, or None when it is neither the token nor a key of this store."""
        known = self._known.get(given)
        if known is not None:
            return known
        raw = given.encode("utf-8", "replace")
        if hmac.compare_digest(raw, self._token):
            return HARNESS
        found = self._verify(given)
        if found is not None:
            with self._lock:
                if len(self._known) >= CACHE_SIZE:
                    # a flood of distinct valid keys costs one MAC each, never memory
                    self._known = {self._token.decode("utf-8"): HARNESS}
                self._known[given] = found
        return found

    def _verify(self, given: str) -> Principal | None:
        parts = given.split(".")
        if len(parts) != 4 or parts[0] != PREFIX or not all(_PART.fullmatch(p) for p in parts[1:3]):
            return None
        unit, turn, mac = parts[1], parts[2], parts[3]
        if not hmac.compare_digest(mac.encode("ascii", "replace"), _mac(self._secret, unit, turn).encode("ascii")):
            return None
        return Principal(writer_name(unit, turn), unit)
