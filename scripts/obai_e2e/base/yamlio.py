"""Reading YAML so that errors can point at a line.

``load_yaml`` returns the data and a map from each value's path (a tuple of keys and
indexes, as jsonschema reports it) to its 1-based line number. Duplicate keys, which
PyYAML would silently collapse, are refused.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

Lines = dict[tuple, int]


class _Loader(yaml.SafeLoader):
    pass


def _walk(node: yaml.Node, path: tuple, lines: Lines, source: str) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    f"{source}:{line}: duplicate key {key!r} (first at line {seen[key]}); each key may appear once"
                )
            seen[key] = line
            _walk(value_node, path + (key,), lines, source)
            # Point a field's errors at its key line, which is where people look.
            lines[path + (key,)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), lines, source)


def load_yaml(path: Path, *, label: str | None = None) -> tuple[Any, Lines]:
    path = Path(path)
    source = label or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}{where}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    lines: Lines = {}
    if node is not None:
        _walk(node, (), lines, source)
    return data, lines


def line_for(lines: Lines, path: tuple) -> int | None:
    """The line of ``path`` or of its nearest ancestor that has one."""
    while True:
        if path in lines:
            return lines[path]
        if not path:
            return None
        path = path[:-1]
