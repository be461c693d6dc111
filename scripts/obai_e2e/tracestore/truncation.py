"""What Opik does to a search hit's values unless the search asks ``truncate: false``.

Enters: a public trace or span dict. Leaves: the same dict with its values slimmed the way
Opik's search endpoints slim them, so that a reader that forgets the flag fails here as it
would against a server:

- base64 image data in input, output and metadata becomes ``[image]`` (the backend's
  ``ImageUtils`` pattern: data URIs and the JPEG, PNG, GIF and BMP base64 prefixes);
- an input or output whose JSON text is 10,001 bytes or longer comes back as a *string*
  holding its first 10,001 bytes instead of the JSON value (the ``truncated_input`` /
  ``truncated_output`` columns of the backend's analytics migration 000041, threshold
  10 KB + 1 byte, read back as a text node because the prefix no longer parses).

Reads by id are never slimmed (Opik's getById has no such flag).
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..base.jsonwalk import rebuild

TRUNCATION_THRESHOLD_BYTES = 10_001
IMAGE_MARKER = "[image]"
_IMAGE = re.compile(
    r"data:image/[^;]{3,4};base64,[^\"]+|/9j/[^\"]+|iVBORw0KGgo=[^\"]+|R0lGODlh[^\"]+|R0lGODdh[^\"]+|Qk[^\"]+"
)


def _image_free(text: str) -> str:
    return _IMAGE.sub(IMAGE_MARKER, text) if _IMAGE.search(text) else text


def _without_images(value: Any) -> Any:
    """``value`` with image data replaced, walked without recursion and kept at any depth."""
    return rebuild(value, _image_free, max_depth=None)


def _cut(value: Any) -> Any:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(text) < TRUNCATION_THRESHOLD_BYTES:
        return value
    return text[:TRUNCATION_THRESHOLD_BYTES].decode("utf-8", errors="ignore")


def slim(item: dict) -> dict:
    """``item`` with images replaced and long inputs and outputs cut (in place; also returned)."""
    for name in ("input", "output", "metadata"):
        if item.get(name) is not None:
            item[name] = _without_images(item[name])
    for name in ("input", "output"):
        if item.get(name) is not None:
            item[name] = _cut(item[name])
    return item
