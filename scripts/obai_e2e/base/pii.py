"""Personal data in korpus units: pseudonymised before anything is stored, quoted only if allowed.

E-mail addresses, phone numbers, IBANs (mod-97 checked), card numbers (Luhn checked) and
the names listed in the target configuration's ``privacy.names`` are replaced by a
pseudonym such as ``[EMAIL-kcqbst]``: an HMAC-SHA256 of the normalised value under a
random salt kept in ``<run_dir>/.pii-salt`` (mode 0600). The same value gets the same
pseudonym everywhere in one run, and a different one in another run. The pseudonym is
written with letters only, so the rubric's number checks never mistake it for a figure.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import tempfile
from pathlib import Path
from typing import Any, Iterable

from .jsonwalk import rebuild

SALT_FILE = ".pii-salt"
SALT_BYTES = 32
QUOTE_WITHHELD = "[quote withheld]"
# 16 letters, 4 bits each; no digits (see the module docstring).
ALPHABET = "bcdfghjklmnpqrst"
TOKEN_CHARS = 6

EMAIL, IBAN, PHONE, CARD, NAME = "EMAIL", "IBAN", "PHONE", "CARD", "NAME"
KINDS = (EMAIL, IBAN, PHONE, CARD, NAME)

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![\w])")
# Phone numbers start with a country code (+49, 0049), a trunk 0, or an area code in
# parentheses; the digit count is checked afterwards (8 to 15, E.164).
_PHONE = re.compile(
    r"(?<![\w+./:,-])"
    r"(?:\+\d{1,3}(?: ?\(0\))?|\(0?\d{2,5}\)|0\d{1,5})"
    r"(?:[ /-]?\(?\d{1,8}\)?){1,5}"
    r"(?![\w])"
)
_US_PHONE = re.compile(r"(?<![\w+./:,-])\d{3}-\d{3}-\d{4}(?![\w-])")
_CARD = re.compile(r"(?<![\w.,:/+-])\d(?:[ -]?\d){12,18}(?![\w])")

# Keys whose values are identifiers, timestamps or hashes the harness made; never personal data.
_SKIP_KEYS = {"id", "session", "correlation_tag", "candidates", "schema_version"}
_SKIP_SUFFIXES = ("_id", "_ids", "_at", "_time", "sha256")


def _skip(key: Any) -> bool:
    return isinstance(key, str) and (key in _SKIP_KEYS or key.endswith(_SKIP_SUFFIXES))


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_ok(compact: str) -> bool:
    if not (15 <= len(compact) <= 34):
        return False
    moved = compact[4:] + compact[:4]
    try:
        return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1
    except ValueError:
        return False


def _prefix_end(text: str, keep, count: int) -> int:
    """Index in ``text`` just after its ``count``-th character for which ``keep`` holds."""
    seen = 0
    for i, ch in enumerate(text):
        if keep(ch):
            seen += 1
            if seen == count:
                return i + 1
    return len(text)


class Pseudonymizer:
    """Replaces personal data in text and JSON-like values; remembers what it replaced."""

    def __init__(self, salt: bytes, names: Iterable[str] = ()):
        self.salt = salt
        names = sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)
        self._names = (re.compile(r"(?<!\w)(?:" + "|".join(r"\s+".join(map(re.escape, n.split())) for n in names)
                                  + r")(?!\w)", re.IGNORECASE) if names else None)
        self.counts: dict[str, int] = {}

    def token(self, kind: str, value: str) -> str:
        digest = hmac.new(self.salt, f"{kind}:{value}".encode("utf-8"), hashlib.sha256).digest()
        letters = "".join(ALPHABET[b >> 4] + ALPHABET[b & 15] for b in digest[:TOKEN_CHARS // 2])
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return f"[{kind}-{letters}]"

    # -- one kind each ------------------------------------------------------------------

    def _email(self, m: re.Match) -> str:
        return self.token(EMAIL, m.group(0).lower())

    def _iban(self, m: re.Match) -> str:
        raw = m.group(0)
        compact = raw.replace(" ", "")
        for length in range(len(compact), 14, -1):
            if iban_ok(compact[:length]):
                end = _prefix_end(raw, str.isalnum, length)
                return self.token(IBAN, compact[:length]) + raw[end:]
        return raw

    def _phone(self, m: re.Match) -> str:
        raw = m.group(0)
        digits = "".join(ch for ch in raw if ch.isdigit())
        # A greedy match may run into a following number: keep the longest plausible prefix.
        for count in range(min(len(digits), 15), 7, -1):
            end = _prefix_end(raw, str.isdigit, count)
            head = raw[:end]
            if end < len(raw) and raw[end].isdigit():
                continue  # never cut inside a group of digits
            norm = "".join(ch for ch in head if ch.isdigit())
            if head.startswith("00"):
                norm = "+" + norm[2:]
            elif head.startswith("+"):
                norm = "+" + norm
            return self.token(PHONE, norm) + raw[end:]
        return raw

    def _card(self, m: re.Match) -> str:
        raw = m.group(0)
        digits = "".join(ch for ch in raw if ch.isdigit())
        return self.token(CARD, digits) if luhn_ok(digits) else raw

    def _name(self, m: re.Match) -> str:
        return self.token(NAME, " ".join(m.group(0).split()).casefold())

    # -- whole values --------------------------------------------------------------------

    def text(self, value: str) -> str:
        if not value:
            return value
        value = _EMAIL.sub(self._email, value)
        value = _IBAN.sub(self._iban, value)
        value = _PHONE.sub(self._phone, value)
        value = _US_PHONE.sub(lambda m: self.token(PHONE, re.sub(r"\D", "", m.group(0))), value)
        value = _CARD.sub(self._card, value)
        if self._names is not None:
            value = self._names.sub(self._name, value)
        return value

    def data(self, value: Any) -> Any:
        """Every string inside a JSON-like value, at any depth, except identifiers and timestamps the harness
        made."""
        return rebuild(value, self.text, keep=_skip, max_depth=None)


def load_or_create_salt(run_dir: Path) -> bytes:
    """The run's salt: created once with mode 0600 (two creators race safely), then read."""
    run_dir = Path(run_dir)
    path = run_dir / SALT_FILE
    if path.exists():
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    run_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".pii-salt.", suffix=".tmp", dir=run_dir)  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(SALT_BYTES) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another writer won; use theirs
    finally:
        os.unlink(tmp)
    os.chmod(path, 0o600)
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def pseudonymizer_for(run_dir: Path, names: Iterable[str] = ()) -> Pseudonymizer:
    return Pseudonymizer(load_or_create_salt(run_dir), names)


def protect(packet: dict, run_dir: Path, names: Iterable[str] = ()) -> dict:
    """The packet with personal data pseudonymised, plus a ``pii`` note of what was replaced."""
    p = pseudonymizer_for(run_dir, names)
    out = p.data(packet)
    out["pii"] = {"pseudonymised": True, "replaced": dict(sorted(p.counts.items()))}
    return out


# -- quoting --------------------------------------------------------------------------------

def may_quote(provenance: str | None, privacy) -> bool:
    """Synthetic units may always be quoted; korpus units only with ``privacy.quote_allowed``."""
    if provenance != "korpus":
        return True
    return bool(privacy is not None and getattr(privacy, "quote_allowed", False))


def withhold_quotes(entry: dict) -> dict:
    """A copy of a results.json unit whose evidence excerpts say ``[quote withheld]``.

    Span ids, unit ids and codes stay, so a finding can still be traced.
    """
    out = dict(entry)
    outcomes = []
    for o in entry.get("rule_outcomes") or ():
        o = dict(o)
        o["evidence"] = [{**e, "excerpt": QUOTE_WITHHELD} for e in o.get("evidence") or ()]
        outcomes.append(o)
    out["rule_outcomes"] = outcomes
    panel = entry.get("judge_panel")
    if isinstance(panel, dict) and panel.get("evidence") is not None:
        out["judge_panel"] = {**panel, "evidence": _withhold_any(panel["evidence"])}
    return out


def _withhold_any(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (QUOTE_WITHHELD if k in ("excerpt", "quote", "text") and isinstance(v, str) else _withhold_any(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_withhold_any(v) for v in value]
    return value
