"""Characters a reader cannot see, written as ``<U+XXXX>`` so that text shows as it is.

Direction overrides and isolates (U+202A–U+202E, U+2066–U+2069) make text display in
another order than it is stored; zero-width characters (U+200B–U+200D, U+2060, U+FEFF),
invisible tag characters (U+E0000 block) and other format characters hide text or tell
apart two strings that look the same. Every one of them in a report is written as its
code point. The set is Unicode's format characters (category Cf), the line and paragraph
separators, and the few letters and marks that render as nothing (Hangul fillers, the
combining grapheme joiner); ``tests/harness/test_invisible.py`` checks it against the
Unicode database of the running Python.
"""
from __future__ import annotations

import re

_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0x3164, 0x3164),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE007F),
)
INVISIBLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" if a != b else chr(a) for a, b in _RANGES) + "]")


def reveal(text: str) -> str:
    """``text`` with every invisible character written as ``<U+XXXX>``."""
    if not INVISIBLE.search(text):
        return text
    return INVISIBLE.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text)
