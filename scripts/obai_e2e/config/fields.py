"""Checking the fields of one configuration file, each message naming the file, the line and the field.

A reading of a file collects every problem it finds (``report``) and raises them together at the end
(``raise_problems``): one run names everything to change, each with its line, its field and, where the
value to write is known (a dotted path's pointer, a path under ``{bundle}``), that value.
"""
from __future__ import annotations

from pathlib import Path

from ..base import jsonptr
from ..base.errors import ConfigError
from ..base.paths import bundle_root
from ..base.patterns import NEVER, Pattern, PatternRefused, compile_pattern
from ..base.schema import problem_text, raise_all
from ..base.yamlio import Lines, line_for
from . import pointers
from .shapes import span_pattern

BUNDLE = "{bundle}"
"""A path in target.yaml may start with this: the harness bundle's folder (its catalogs, the demo's plan)."""


class Fields:
    """Messages about fields of one file, and the checks that collect them."""

    def __init__(self, source: str, lines: Lines, folder: Path | None = None):
        self.source, self.lines = source, lines
        self.folder = folder
        self.problems: list[dict] = []
        self.missing: list[dict] = []  # paths to files that do not exist: named with the problems, or by preflight

    def located(self, path: tuple, message: str, write=None) -> dict:
        line = line_for(self.lines, path)
        problem = {"where": f"{self.source}:{line}" if line else self.source,
                   "field": "/" + "/".join(str(p) for p in path), "message": message}
        if write is not None:
            problem["write"] = write
        return problem

    def error(self, path: tuple, message: str) -> ConfigError:
        problem = self.located(path, message)
        return ConfigError(problem_text(problem), [problem])

    def report(self, path: tuple, message: str, write=None) -> None:
        """Note a problem of this field; the reading goes on, and ``raise_problems`` names them all."""
        self.problems.append(self.located(path, message, write))

    def adopt(self, exc: ConfigError) -> None:
        """Take over the problems of a ConfigError raised by a part of the reading."""
        self.problems.extend(exc.problems or [{"where": self.source, "field": "/", "message": str(exc)}])

    def raise_problems(self) -> None:
        """Raise every problem noted; the error carries the missing files too (``missing``), which preflight
        names with them."""
        if not self.problems:
            return
        try:
            raise_all(self.problems, self.source)
        except ConfigError as exc:
            exc.missing = list(self.missing)
            raise

    def regex(self, value: str, path: tuple) -> Pattern:
        """A user pattern on RE2 (base/patterns.py); one it cannot run is noted and reads as ``NEVER``."""
        try:
            return compile_pattern(value)
        except PatternRefused as exc:
            self.report(path, str(exc))
            return NEVER

    def span(self, value: str | None, path: tuple) -> str | None:
        if value is None:
            return None
        try:
            span_pattern(value)
        except ValueError as exc:
            self.report(path, f"not a span name, template or re: pattern: {exc}")
            return None
        return value

    def pointer(self, value: str | None, path: tuple) -> str | None:
        """A JSON pointer into any document (a payload on stdout, the trace's output)."""
        if value is None:
            return None
        try:
            jsonptr.parse(value)
        except ValueError as exc:
            self.report(path, str(exc))
            return None
        return value

    def span_pointer(self, value: str | None, path: tuple) -> str | None:
        """A JSON pointer that starts at a span as ``traces sample --json`` prints it."""
        return self._record_pointer(value, path, pointers.SPAN_FIELDS, "span")

    def trace_pointer(self, value: str | None, path: tuple) -> str | None:
        """A JSON pointer that starts at a trace as ``traces sample --json`` prints it."""
        return self._record_pointer(value, path, pointers.TRACE_FIELDS, "trace")

    def _record_pointer(self, value, path, fields, what) -> str | None:
        if value is None:
            return None
        try:
            return pointers.check(value, fields, what)
        except pointers.PointerError as exc:
            self.report(path, str(exc), exc.write)
        except ValueError as exc:
            self.report(path, str(exc))
        return None

    def path(self, value: str | None, path: tuple) -> Path | None:
        """A file path: absolute, ``{bundle}/...``, or relative to the folder of this file."""
        if value is None:
            return None
        if value == BUNDLE or value.startswith(BUNDLE + "/"):
            return (bundle_root() / value[len(BUNDLE) + 1:]).resolve()
        if "{" in value:
            self.report(path, f"{value!r}: the only placeholder in a path is {BUNDLE} (the harness bundle)")
            return None
        p = Path(value).expanduser()
        return p if p.is_absolute() else ((self.folder or Path.cwd()) / p).resolve()

    def existing_file(self, value: str | None, path: tuple, what: str) -> Path | None:
        """A path (see ``path``) that should name an existing file (a missing one is noted in ``missing``: the
        commands that read the file name it). When it does not, and the same relative path
        is a file of the harness bundle (where such paths pointed before they were read from this file's
        folder), the fix is to write it under {bundle}."""
        resolved = self.path(value, path)
        if resolved is None or resolved.exists():
            return resolved
        message = (f"the {what} {resolved} does not exist (a relative path starts at this file's folder, "
                   f"{self.folder}; {BUNDLE}/… starts at the harness bundle, {bundle_root()})")
        write = None
        if not Path(value).is_absolute() and not value.startswith(BUNDLE) and (bundle_root() / value).is_file():
            write = f"{BUNDLE}/{Path(value).as_posix()}"
            message += f": the bundle has {value}, write {write!r}"
        self.missing.append(self.located(path, message, write))
        return resolved
