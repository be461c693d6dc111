"""Reading YAML so that errors can point at a line, and hostile files are refused cheaply.

``load_yaml_doc`` parses a file once (with libyaml when PyYAML has it; a list under a
top-level key an item at a time, see yaml_compose.py) and returns the data, a map from
each value's path (a tuple of keys and indexes, as jsonschema reports it) to its 1-based
line number, and the source text of every number. Before anything is built from the
parsed nodes it refuses, with the file and line named:

* files larger than the size limit, files that are not UTF-8 text;
* duplicate keys (PyYAML would silently keep the last one);
* nesting deeper than ``MAX_DEPTH`` levels, counting what aliases expand to;
* aliases that add more than ``ALIAS_FACTOR`` times the values written in the file
  (and at least ``ALIAS_BUDGET``), as in "billion laughs", and aliases that refer to
  the node that contains them;
* non-finite numbers (``.nan``, ``.inf``, a float that overflows) and integers outside
  the signed 64-bit range.
"""
from __future__ import annotations

import gc
import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import yaml_compose
from .errors import ConfigError

Lines = dict[tuple, int]

# libyaml parses ~20x faster than the pure-Python parser; both give the same nodes.
LIBYAML = bool(getattr(yaml, "__with_libyaml__", False)) and hasattr(yaml, "CSafeLoader")
_BaseLoader = yaml.CSafeLoader if LIBYAML else yaml.SafeLoader

DEFAULT_MAX_MB = 8
MAX_MB_ENV = "OBAI_E2E_YAML_MAX_MB"
MAX_DEPTH = 32
ALIAS_BUDGET = 10_000
ALIAS_FACTOR = 10
INT_LIMIT = 2**63 - 1

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
_BOOL = "tag:yaml.org,2002:bool"


class _Loader(_BaseLoader):
    pass


class _PureLoader(yaml.SafeLoader):
    pass


@dataclass
class YamlDoc:
    """A parsed YAML file: its data, the line of every value, and the text of every number."""

    path: Path
    data: Any
    lines: Lines
    numbers: dict[tuple, str] = field(default_factory=dict)
    sha256: str = ""
    yaml11_bools: dict[tuple, str] = field(default_factory=dict)  # path -> word (yes, off, ...) read as a boolean


def max_bytes() -> int:
    """The size limit of a YAML file in bytes (``$OBAI_E2E_YAML_MAX_MB`` megabytes, default 8)."""
    raw = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        raise ConfigError(f"${MAX_MB_ENV}: {raw!r} is not a number of megabytes") from None
    if not math.isfinite(mb) or mb <= 0:
        raise ConfigError(f"${MAX_MB_ENV}: {raw!r} must be a positive number of megabytes")
    return int(mb * 1024 * 1024)


def _read(path: Path, source: str) -> bytes:
    limit = max_bytes()
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"{source}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read ({exc.strerror or exc})") from None
    if path.is_dir():
        raise ConfigError(f"{source}: is a directory, expected a YAML file")
    if not path.is_file():
        raise ConfigError(f"{source}: not a regular file, expected a YAML file")
    too_big = (f"{source}: the file is larger than the {limit / 1048576:g} MB limit for a YAML file; "
               f"split it, or raise the limit with ${MAX_MB_ENV}")
    if st.st_size > limit:
        raise ConfigError(too_big)
    try:
        with path.open("rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise ConfigError(too_big)
    return raw


class _Checker:
    """One pass over the composed nodes: lines, duplicate keys, depth, alias expansion, numbers."""

    def __init__(self, loader: yaml.SafeLoader, source: str, *, pure: bool, depth: int | None = None) -> None:
        self.loader = loader
        self.pure = pure
        self.source = source
        self.depth = depth  # lines are kept for paths this long at most (None: every path)
        self.lines: Lines = {}
        self.numbers: dict[tuple, str] = {}
        self.yaml11_bools: dict[tuple, str] = {}
        self.done: dict[int, tuple[int, int]] = {}  # node id -> (expanded size, height)
        self.visited = 0  # values written in the file (nodes visited), for the alias budget
        self.active: set[int] = set()
        self.alias_extra = 0

    def fail(self, node: yaml.Node, message: str) -> ConfigError:
        return ConfigError(f"{self.source}:{node.start_mark.line + 1}: {message}")

    def fail_alias(self, path: tuple, message: str) -> ConfigError:
        # An alias has no node of its own: name the line of the value that holds it.
        return ConfigError(f"{self.source}:{line_for(self.lines, path[:-1]) or 1}: {message}")

    def visit(self, node: yaml.Node, path: tuple, depth: int) -> tuple[int, int]:
        nid = id(node)
        if nid in self.done:
            size, height = self.done[nid]
            self.alias_extra += size
            if depth + height - 1 > MAX_DEPTH:
                raise self.fail_alias(path, f"nested more than {MAX_DEPTH} levels deep once aliases are expanded")
            budget = max(ALIAS_BUDGET, ALIAS_FACTOR * self.visited)
            if self.alias_extra > budget:
                raise self.fail_alias(path, f"aliases expand to more than {budget} values ({ALIAS_FACTOR} times the "
                                            f"values written in the file, at least {ALIAS_BUDGET}); write the values "
                                            "out instead")
            self.line(path, node.start_mark.line + 1)
            return size, height
        if nid in self.active:
            raise self.fail_alias(path, "an anchor is used inside its own value (a recursive structure)")
        self.line(path, node.start_mark.line + 1)
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, yaml.ScalarNode):
            if node.tag != _STR:
                self.scalar(node, path)
                if node.tag == _BOOL and node.value.lower() not in ("true", "false"):
                    self.yaml11_bools[path] = node.value
            elif self.pure and not node.value.isascii():
                self.text(node)
            result = (1, 1)
        else:
            self.active.add(nid)
            size, height = 1, 0
            if isinstance(node, yaml.MappingNode):
                items = self.mapping_items(node, path)
            else:
                items = ((path + (i,), None, item) for i, item in enumerate(node.value))
            for child_path, key_line, child in items:
                s, h = self.visit(child, child_path, depth + 1)
                if key_line is not None:
                    # Point a field's errors at its key line, which is where people look.
                    self.line(child_path, key_line, replace=True)
                size += s
                height = max(height, h)
            height += 1
            self.active.discard(nid)
            result = (size, height)
        self.done[nid] = result
        self.visited += 1
        return result

    def line(self, path: tuple, line: int, *, replace: bool = False) -> None:
        """Note the line of ``path`` (the first one noted stays, unless ``replace``)."""
        if self.depth is None or len(path) <= self.depth:
            if replace:
                self.lines[path] = line
            else:
                self.lines.setdefault(path, line)

    def forget(self, kept: set[int]) -> None:
        """Drop what is known of nodes that are gone, but of those in ``kept`` (anchored ones, still alive):
        a freed node's id may be a new node's."""
        self.done = {nid: v for nid, v in self.done.items() if nid in kept}

    def duplicate(self, key_node: yaml.ScalarNode, first: int) -> ConfigError:
        return ConfigError(f"{self.source}:{key_node.start_mark.line + 1}: duplicate key {key_node.value!r} "
                           f"(first at line {first}); each key may appear once")

    def mapping_items(self, node: yaml.MappingNode, path: tuple):
        seen: dict[tuple, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if isinstance(key_node, yaml.ScalarNode):
                ident = (key_node.tag, key_node.value)
                if ident in seen:
                    raise self.duplicate(key_node, seen[ident])
                seen[ident] = line
                key = key_node.value if key_node.tag in (_STR, _MERGE) else self.scalar(key_node, path)
            else:
                key = f"<key at line {line}>"  # the constructor refuses it: a key must be a plain value
            try:
                hash(key)
            except TypeError:
                key = f"<key at line {line}>"
            yield path + (key,), line, value_node

    def text(self, node: yaml.ScalarNode) -> None:
        # libyaml refuses escaped surrogates; the pure-Python parser lets them through.
        try:
            node.value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise self.fail(node, f"an escape gives the lone surrogate U+{ord(node.value[exc.start]):04X}, "
                                  "which is not text") from None

    def scalar(self, node: yaml.ScalarNode, path: tuple) -> Any:
        """Build a non-string scalar now (the constructor reuses it) and check numbers."""
        if node.tag == _INT and len(node.value) > 40:
            raise self.fail(node, f"the integer {node.value[:20]}... is out of range (at most {INT_LIMIT})")
        try:
            value = self.loader.construct_object(node)
        except (ValueError, OverflowError, TypeError) as exc:
            raise self.fail(node, f"{node.value[:60]!r} is not a valid {node.tag.rsplit(':', 1)[-1]} ({exc})") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(node, f"{node.value[:60]!r} is not a finite number; write a finite value")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT_LIMIT:
            raise self.fail(node, f"the integer {node.value[:60]} is out of range (at most {INT_LIMIT})")
        if node.tag in (_INT, _FLOAT):
            self.numbers[path] = node.value
        return value


def _yaml_error(exc: yaml.YAMLError, source: str, parsed: bytes | str) -> ConfigError:
    if isinstance(exc, yaml.reader.ReaderError):
        # libyaml counts bytes, the pure-Python reader characters of the text it was given.
        newline = b"\n" if isinstance(parsed, bytes) else "\n"
        line = parsed.count(newline, 0, max(0, exc.position)) + 1
        what = f"character #x{exc.character:04x}" if isinstance(exc.character, int) else "character"
        where = f"{source}:{line}" if line else source
        return ConfigError(f"{where}: not valid YAML: unacceptable {what} (control characters and invalid "
                           "text are not allowed; write them as escapes in a double-quoted string)")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = ", ".join(p for p in (exc.context, exc.problem) if p) or "unknown problem"
        if "maximum nesting depth" in problem:
            problem = f"nested more than {MAX_DEPTH} levels deep"
        return ConfigError(f"{where}: not valid YAML: {problem}")
    return ConfigError(f"{source}: not valid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")


def load_yaml_doc(path: Path, *, label: str | None = None, libyaml: bool = LIBYAML,
                  line_depth: int | None = None) -> YamlDoc:
    """Parse ``path`` once; every problem is a ConfigError naming ``label`` (or the path) and a line.

    ``libyaml=False`` uses PyYAML's pure-Python parser (what runs where libyaml is missing).
    ``line_depth``: keep the lines of paths this long at most (a long file's line map is about as
    large as its data; a caller that finds a problem reads the file again with every line). A
    problem found while parsing is reported as a parse with every line reports it.
    """
    if line_depth is not None:
        try:
            return _load(path, label, libyaml, line_depth)
        except ConfigError:
            pass  # the same problem, now with the line of every value
    return _load(path, label, libyaml, None)


def _load(path: Path, label: str | None, libyaml: bool, line_depth: int | None) -> YamlDoc:
    path = Path(path)
    source = label or str(path)
    raw = _read(path, source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{source}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                          "save the file as UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    libyaml = libyaml and LIBYAML
    loader = None
    # Building ~10^5 small objects would trigger the cyclic collector over and over: it
    # tripled the time of a 10,000-case file. Nothing here makes garbage cycles.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loader = _Loader(raw) if libyaml else _PureLoader(text)
        checker = _Checker(loader, source, pure=not libyaml, depth=line_depth)
        try:
            data = yaml_compose.build(loader, checker, pure=not libyaml)
        except yaml_compose.WholeDocument:
            loader.dispose()
            loader = _Loader(raw) if libyaml else _PureLoader(text)
            checker = _Checker(loader, source, pure=not libyaml, depth=line_depth)
            node = loader.get_single_node()
            data = None
            if node is not None:
                checker.visit(node, (), 0)
                data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source, raw if libyaml else text) from None
    except RecursionError:
        # Only the pure-Python parser recurses per nesting level.
        raise ConfigError(f"{source}: not valid YAML: nested too deeply (more than {MAX_DEPTH} levels allowed)") from None
    finally:
        if loader is not None:
            loader.dispose()
        if collecting:
            gc.enable()
    return YamlDoc(path=path, data=data, lines=checker.lines, numbers=checker.numbers,
                   sha256=hashlib.sha256(raw).hexdigest(), yaml11_bools=checker.yaml11_bools)


def load_yaml(path: Path, *, label: str | None = None) -> tuple[Any, Lines]:
    """(data, line map) of a YAML file; see ``load_yaml_doc``."""
    doc = load_yaml_doc(path, label=label)
    return doc.data, doc.lines


def line_for(lines: Lines, path: tuple) -> int | None:
    """The line of ``path`` or of its nearest ancestor that has one."""
    while True:
        if path in lines:
            return lines[path]
        if not path:
            return None
        path = path[:-1]
