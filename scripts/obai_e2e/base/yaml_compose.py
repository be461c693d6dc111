"""Building a YAML document from its parser events, one item of a top-level list at a time.

PyYAML composes a whole document into nodes (each with two marks) before anything is
built from them: about 6 KB a case for a cases file, all held at once. Here a document
whose top is a mapping is built key by key, and a list under a top-level key item by item:
each item is composed, checked (yamlio's checker: lines, duplicate keys, depth, aliases,
numbers) and built, and its nodes are let go before the next item is read. Only anchored
nodes are kept, for the aliases that may follow. What comes out — the data, the line map,
the numbers, and which problem is reported first (a YAML error before a checker's, a
checker's before a construction error) — is what composing the whole document gives;
a document this does not take apart (another top, a merge key or an anchor at the top)
is composed whole, as before.
"""
from __future__ import annotations

import sys
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

INTERNED_CHARS = 64  # a short text is kept once however many items repeat it
_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"


class WholeDocument(Exception):
    """The document is to be composed whole (it has a shape this module does not take apart)."""


class Composer:
    """Composes nodes from ``loader``'s events as PyYAML's composer does (with its messages for
    ``pure`` and libyaml's otherwise), keeping anchored nodes only."""

    def __init__(self, loader, pure: bool):
        self.loader = loader
        self.pure = pure
        self.anchors: dict[str, yaml.Node] = {}

    def node(self) -> yaml.Node:
        ld = self.loader
        if ld.check_event(AliasEvent):
            event = ld.get_event()
            if event.anchor not in self.anchors:
                problem = f"found undefined alias {event.anchor!r}" if self.pure else "found undefined alias"
                raise yaml.composer.ComposerError(None, None, problem, event.start_mark)
            return self.anchors[event.anchor]
        event = ld.peek_event()
        anchor = event.anchor
        if anchor is not None and anchor in self.anchors:
            first = f"found duplicate anchor {anchor!r}; first occurrence" if self.pure else \
                "found duplicate anchor; first occurrence"
            raise yaml.composer.ComposerError(first, self.anchors[anchor].start_mark, "second occurrence",
                                              event.start_mark)
        if ld.check_event(ScalarEvent):
            event = ld.get_event()
            value = event.value
            if len(value) <= INTERNED_CHARS:  # keys, names, labels: the same few words in every item
                value = sys.intern(value)
            tag = event.tag if event.tag not in (None, "!") else ld.resolve(ScalarNode, value, event.implicit)
            node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=event.style)
        elif ld.check_event(SequenceStartEvent):
            node = self._collection(SequenceNode, SequenceEndEvent, anchor, pairs=False)
            return node
        else:
            node = self._collection(MappingNode, MappingEndEvent, anchor, pairs=True)
            return node
        if anchor is not None:
            self.anchors[anchor] = node
        return node

    def _collection(self, kind, end, anchor: str | None, *, pairs: bool):
        ld = self.loader
        start = ld.get_event()
        tag = start.tag if start.tag not in (None, "!") else ld.resolve(kind, None, start.implicit)
        node = kind(tag, [], start.start_mark, None, flow_style=start.flow_style)
        if anchor is not None:
            self.anchors[anchor] = node
        while not ld.check_event(end):
            node.value.append((self.node(), self.node()) if pairs else self.node())
        node.end_mark = ld.get_event().end_mark
        return node


class Builder:
    """Checks and builds one value at a time, keeping the first problem of each kind for the order they
    would be reported in had the document been composed whole: a checker's problem before a construction
    error (YAML errors are raised where they occur)."""

    def __init__(self, composer: Composer, checker):
        self.composer, self.loader, self.checker = composer, composer.loader, checker
        self.checked: Exception | None = None
        self.built: Exception | None = None

    def value(self, node: yaml.Node, path: tuple, depth: int) -> Any:
        """Check ``node`` at ``path`` and build its value (None once an earlier one had a problem)."""
        try:
            if self.checked is None:
                try:
                    self.checker.visit(node, path, depth)
                except Exception as exc:  # noqa: BLE001 - reported after the rest is parsed, as before
                    self.checked = exc
            if self.checked is not None or self.built is not None:
                return None
            try:
                return self.loader.construct_document(node)
            except yaml.YAMLError as exc:
                self.built = exc
                return None
        finally:
            # The value's nodes go now; a new node may get the id of one of them.
            self.checker.forget(set(map(id, self.composer.anchors.values())))

    def done(self) -> None:
        if self.checked is not None:
            raise self.checked
        if self.built is not None:
            raise self.built


def build(loader, checker, pure: bool) -> Any:
    """The single document of ``loader``'s stream, built as described above (None for an empty stream);
    :class:`WholeDocument` when it is to be composed whole."""
    loader.get_event()  # the stream's start
    if loader.check_event(StreamEndEvent):
        loader.get_event()
        return None
    loader.get_event()  # the document's start
    composer = Composer(loader, pure)
    builder = Builder(composer, checker)
    start = loader.peek_event()
    if not isinstance(start, MappingStartEvent) or start.anchor is not None or start.tag not in (None, "!", _MAP):
        raise WholeDocument
    loader.get_event()
    checker.line((), start.start_mark.line + 1)
    data = _mapping(composer, builder, checker)
    loader.get_event()  # the document's end
    if not loader.check_event(StreamEndEvent):
        event = loader.get_event()
        raise yaml.composer.ComposerError("expected a single document in the stream", start.start_mark,
                                          "but found another document", event.start_mark)
    loader.get_event()
    builder.done()
    return data


def _mapping(composer: Composer, builder: Builder, checker) -> dict:
    loader = composer.loader
    data: dict = {}
    seen: dict[tuple, int] = {}
    while not loader.check_event(MappingEndEvent):
        key_node = composer.node()
        if not isinstance(key_node, ScalarNode) or key_node.tag != _STR:
            raise WholeDocument  # a merge key or a key that is no plain string
        line = key_node.start_mark.line + 1
        if builder.checked is None and (key_node.tag, key_node.value) in seen:
            builder.checked = checker.duplicate(key_node, seen[(key_node.tag, key_node.value)])
        seen.setdefault((key_node.tag, key_node.value), line)
        key = key_node.value
        event = loader.peek_event()
        if isinstance(event, SequenceStartEvent) and event.anchor is None and event.tag in (None, "!", _SEQ):
            data[key] = _items(composer, builder, checker, key)
        else:
            data[key] = builder.value(composer.node(), (key,), 1)
        checker.line((key,), line, replace=True)  # a field's errors point at its key line
    loader.get_event()
    return data


def _items(composer: Composer, builder: Builder, checker, key: str) -> list:
    """The items of the list under a top-level key, each composed, checked and built in turn."""
    loader = composer.loader
    start = loader.get_event()
    checker.line((key,), start.start_mark.line + 1)
    items = []
    while not loader.check_event(SequenceEndEvent):
        items.append(builder.value(composer.node(), (key, len(items)), 2))
    loader.get_event()
    return items
