"""Invisible characters are written as <U+XXXX>: the set covers every format character of this Python's Unicode."""
import sys
import unicodedata

from obai_e2e.base.invisible import INVISIBLE, reveal


def test_every_format_and_separator_character_is_revealed():
    missed = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
              if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp") and not INVISIBLE.match(chr(c))]
    assert not missed, missed


def test_visible_text_is_left_alone():
    text = "AAPL 238.41 € — 日本語 \u00e9 e\u0301 \u2764\ufe0f\t\n"
    assert reveal(text) is text


def test_reveal_names_each_character():
    assert reveal("a\u202eb\u200dc\ufeff") == "a<U+202E>b<U+200D>c<U+FEFF>"
