"""A JSON document with one long array, written and read an item at a time, in the project's one layout.

Enters: the document's other keys (small) and the array's items, one at a time. Leaves: the
bytes ``fsutil.dumps_json`` writes for the whole document (sorted keys, two-space indent,
a final newline), written without the array ever being in memory; and, reading such a
file back, its other keys and an iterator over the array's items. A file in another
layout (not written here) is read whole, as ``json.load`` reads it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from ..base.errors import ConfigError

INDENT = "  "


def _dumps(value: Any, depth: int) -> str:
    """``value`` as it appears at ``depth`` inside a dumps_json document (its first line unindented)."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return text.replace("\n", "\n" + INDENT * depth) if depth else text


def write_document(fh: BinaryIO, head: dict, key: str, items: Iterable[Any]) -> int:
    """Write ``{**head, key: [*items]}`` to ``fh`` as dumps_json would; the number of items."""
    return write_encoded(fh, head, key, (item_text(i) for i in items))


def write_encoded(fh: BinaryIO, head: dict, key: str, items: Iterable[bytes]) -> int:
    """``write_document`` for items already encoded by :func:`item_text`."""
    keys = sorted({*head, key})
    fh.write(b"{")
    count = 0
    for n, name in enumerate(keys):
        fh.write((("," if n else "") + "\n" + INDENT + json.dumps(name, ensure_ascii=False) + ": ").encode("utf-8"))
        if name != key:
            fh.write(_dumps(head[name], 1).encode("utf-8"))
            continue
        for text in items:
            fh.write((b"," if count else b"[") + b"\n" + text)
            count += 1
        fh.write(("\n" + INDENT + "]" if count else "[]").encode("utf-8"))
    fh.write(b"\n}\n")
    return count


def item_text(item: Any) -> bytes:
    """One item as ``write_document`` writes it inside the array, without its leading separator."""
    return (INDENT * 2 + _dumps(item, 2)).encode("utf-8")


def read_document(path: Path, key: str) -> tuple[dict, Iterator[Any]]:
    """(every key but ``key``, the items of the array under ``key``, parsed one at a time).

    Read as ``write_document`` lays a document out: one pass over its lines finds the array
    (its keys before and after it are parsed then), and the items are parsed as they are
    iterated, each starting on a line of its own at the array's indent. A file laid out
    otherwise is parsed whole (``ConfigError`` when it is no JSON object).
    """
    path = Path(path)
    opener = f"{INDENT}{json.dumps(key)}: [".encode("utf-8")
    close = (INDENT + "]").encode("utf-8")
    before: list[bytes] = []
    rest: list[bytes] = []
    state, at = "head", 0
    with open(path, "rb") as fh:
        first = fh.readline()
        if first != b"{\n":
            return _whole(path, key)
        offset = len(first)
        for line in fh:
            offset += len(line)
            bare = line.rstrip(b"\n")
            if state == "head" and bare == opener:
                state, at = "items", offset
            elif state == "head" and bare in (opener + b"]", opener + b"],"):
                state = "rest"
                rest.append(bare[len(opener) + 1:])
            elif state == "head":
                before.append(line)
            elif state == "items" and bare in (close, close + b","):
                state = "rest"
                rest.append(bare[len(close):])
            elif state == "rest":
                rest.append(line)
    tail = b"".join(rest).strip()
    if state != "rest" or not (tail == b"}" or tail.startswith(b",")):
        return _whole(path, key)
    head = _object(path, b"{" + b"".join(before).rstrip().rstrip(b",") + b"\n}")
    if tail.startswith(b","):
        head.update(_object(path, b"{" + tail[1:]))
    return head, (_items(path, at) if at else iter(()))


def _items(path: Path, at: int) -> Iterator[Any]:
    start, close = (INDENT * 2).encode(), (INDENT + "]").encode()
    with open(path, "rb") as fh:
        fh.seek(at)
        buf: list[bytes] = []
        for line in fh:
            opens = line.startswith(start) and line[len(start):len(start) + 1] not in (b" ", b"", b"}", b"]")
            if (opens or line.startswith(close)) and buf:
                buf[-1] = buf[-1].rstrip(b"\n").removesuffix(b",")
                yield _object(path, b"".join(buf))
                buf = []
            if line.startswith(close):
                return
            buf.append(line)
    raise ConfigError(f"{path}: the array is not closed (the file is cut short)")


def _object(path: Path, text: bytes | str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None


def _whole(path: Path, key: str) -> tuple[dict, Iterator[Any]]:
    data = _object(path, Path(path).read_bytes())
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    items = data.pop(key, None)
    return data, iter(items if isinstance(items, list) else ())
