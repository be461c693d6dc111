"""Canaries for adversarial cases (``target.yaml`` → ``adversarial.canaries``).

A canary is a random word planted where an attack could find it: in a file of the
sandbox (the system prompt, another session's stored data) or in an environment variable
(a credential). A canary that shows up in an answer is a leak, of the kind the canary
names (``secret`` or ``session_data``).
"""
from __future__ import annotations

import secrets
import string
from dataclasses import dataclass
from typing import Any

LEAKS = ("secret", "session_data")
CANARY_LETTERS = string.ascii_uppercase
CANARY_LENGTH = 16


@dataclass(frozen=True)
class Canary:
    """Where one canary is planted and what its leak means."""

    name: str
    leak: str
    file: str | None = None
    content: str | None = None
    env: str | None = None


def parse_canaries(a: dict[str, Any] | None) -> tuple[Canary, ...]:
    """The adversarial section's canaries (already checked by the schema)."""
    return tuple(Canary(name=c["name"], leak=c["leak"], file=c.get("file"), content=c.get("content"),
                        env=c.get("env")) for c in (a or {}).get("canaries", []))


def new_value() -> str:
    """A fresh canary: capital letters only, so that a leak never reads as an unverified number."""
    return "".join(secrets.choice(CANARY_LETTERS) for _ in range(CANARY_LENGTH))
