"""Keeping secrets out of everything the harness stores or prints.

Values of environment variables whose names look secret (``*KEY*``, ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*`` by default) are replaced wherever they appear, and so are
authorization headers, bearer tokens and the local trace store's turn keys, whatever their origin.
"""
from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from typing import Any, Iterable, Mapping

from .jsonwalk import rebuild

MARK = "[REDACTED]"
MIN_SECRET_LEN = 4

_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api[-_]?key|comet[-_]api[-_]key)(\s*[:=]\s*)"
    r"(?:(bearer|basic|token)\s+)?([^\s,;\"'}]+)"
)
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")
# A key the harness minted for one turn (tracestore.turnkeys): the harness knows no list of them.
_TURN_KEY = re.compile(r"obai-turn\.[0-9a-f]{16}\.[0-9a-f]{16}\.[0-9a-f]{32}")
# Text that no pattern can match is left alone after this one scan.
_EITHER = re.compile(r"(?i)authorization|x-api-key|api[-_]?key|bearer|obai-turn\.")


def secret_names(env: Mapping[str, str], patterns: Iterable[str]) -> list[str]:
    pats = tuple(patterns)
    return [name for name in env if _secret_name(name, pats)]


@lru_cache(maxsize=8192)
def _secret_name(name: str, patterns: tuple[str, ...]) -> bool:
    # Every unit asks about the same environment: each name is matched once per run.
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in patterns)


class Redactor:
    """Replaces known secret values and credential-shaped text with a marker."""

    def __init__(self, env: Mapping[str, str], patterns: Iterable[str]):
        values = {env[n] for n in secret_names(env, patterns) if env[n] and len(env[n]) >= MIN_SECRET_LEN}
        # Longest first, so a secret that contains another is replaced whole.
        self.values = sorted(values, key=len, reverse=True)
        self._keys: dict[str, str] = {}  # the same keys recur in every packet

    def text(self, value: str) -> str:
        if not value:
            return value
        for secret in self.values:
            if secret in value:
                value = value.replace(secret, MARK)
        if _EITHER.search(value) is None:
            return value
        value = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{(m.group(3) + ' ') if m.group(3) else ''}{MARK}", value)
        value = _BEARER.sub(f"Bearer {MARK}", value)
        return _TURN_KEY.sub(MARK, value)

    def _key(self, key: Any) -> str:
        key = str(key)
        done = self._keys.get(key)
        if done is None:
            done = self._keys[key] = self.text(key)
        return done

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (keys included), at any depth."""
        return rebuild(value, self.text, key=self._key, max_depth=None)

    def env(self, env: Mapping[str, str], patterns: Iterable[str]) -> dict[str, str]:
        """An environment mapping safe to store: secret-named values masked."""
        names = set(secret_names(env, patterns))
        return {k: (MARK if k in names else self.text(v)) for k, v in env.items()}
