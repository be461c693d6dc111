"""The one reader (and the writer) of a run's results: the results.json head and its rows.

Every reader of results goes through ``open_results``: the HTML report, JUnit, gates, shard
timings, the loss layer. Two layouts are read:

* schema version 1: one ``results.json`` with the units inline (``units: [...]``);
* schema version 2: ``results.json`` is a small head (run, summary, disabled) and names
  its rows file, ``results.units.jsonl``: one unit per line, in unit order, each line a
  complete JSON object of the same shape as a version 1 unit. The head records the rows
  file's name, its number of rows and the SHA-256 of its bytes::

      "units_file": {"path": "results.units.jsonl", "count": 100000, "sha256": "…"}

Rows are parsed as they are read, so memory does not grow with the file. Each row has a
``ref`` (its index for inline units, its byte offset in the rows file) by which it can be
read again later, which is how a citation reaches back into a unit without keeping it.
The head is checked against the version 1 frame; an evenly spread sample of rows against
the version 1 unit schema (every row was checked when the run wrote it; the sample
catches a file of another version or tool, and a row a reader cannot use is checked in
full then, so its message names the line and field); the rows file against the head's
count and SHA-256.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import orjson
from jsonschema import Draft202012Validator

from ..base import schema
from ..base.errors import ConfigError
from ..base.fsutil import atomic_writer

UNITS_FILE = "results.units.jsonl"
RESULTS_V1 = "results.v1.schema.json"
STREAMED_VERSION = 2
SUPPORTED = (1, STREAMED_VERSION)
SAMPLE_UNITS = 200        # rows of a rows file checked against the unit schema, spread evenly
BLOCK = 1 << 20


def _unit_schema() -> dict:
    v1 = schema.load_schema(RESULTS_V1)
    return {"$defs": v1["$defs"], "$ref": "#/$defs/unit"}


def _unit_validator() -> Draft202012Validator:
    return Draft202012Validator(_unit_schema())


def unit_checker():
    """A function (entry, where) that raises ConfigError naming ``where`` and the field for a bad unit.

    A valid unit is confirmed by jsonschema-rs; only a unit it refuses is walked by
    jsonschema for the field and the wording of the message.
    """
    validator = _unit_validator()
    fast = schema.fast_validator_for(_unit_schema())

    def check(entry, where: str) -> None:
        if fast is not None:
            try:
                if fast.is_valid(entry):
                    return
            except Exception:  # noqa: BLE001 - a value it cannot convert: jsonschema decides
                pass
        error = schema.first_error(validator, entry)
        if error is not None:
            raise ConfigError(f"{where}: field {schema.pointer(error.absolute_path)}: {schema.describe(error)}")
    return check


INLINE_SAMPLE_UNITS = 2000  # inline units (version 1): checked in full up to this many, else a sample


def _step(count: int, sample: int = SAMPLE_UNITS) -> int:
    return count // sample + 1 if count > sample else 1


def _units_file(head: dict, source: str) -> dict:
    spec = head.get("units_file")
    if not isinstance(spec, dict) or not isinstance(spec.get("path"), str) or "/" in spec["path"] \
            or not isinstance(spec.get("count"), int) or spec["count"] < 0 \
            or not isinstance(spec.get("sha256"), str):
        raise ConfigError(f"{source}: field /units_file: expected {{\"path\": \"{UNITS_FILE}\", \"count\": <units>, "
                          "\"sha256\": <hex>}} naming the rows file beside it")
    return spec


def check_head(head: dict, source: str) -> None:
    """A version 2 head: the version 1 frame (run, summary, disabled) plus a well-formed ``units_file``."""
    _units_file(head, source)
    frame = {k: v for k, v in head.items() if k != "units_file"}
    schema.check({**frame, "schema_version": 1, "units": []}, RESULTS_V1, source=source)


@dataclass
class ResultsRows:
    """A run's results: the head (everything but the units) and a way to stream its units."""

    path: Path
    head: dict
    count: int
    units: list | None = None          # inline units (version 1, or data built in memory)
    units_path: Path | None = None     # the rows file (version 2)
    sha256: str | None = None
    check: bool = True
    _check: object = field(default=None, repr=False)

    @property
    def run(self) -> dict:
        return self.head.get("run") or {}

    def explain(self, ref: int, entry) -> ConfigError:
        """A clear error for a row a reader could not use: its line and the first field the schema rejects."""
        if self.units is not None:
            where = f"{self.path}: units[{ref}]"
        else:
            with open(self.units_path, "rb") as fh:
                line = fh.read(ref).count(b"\n") + 1
            where = f"{self.units_path}:{line}"
        try:
            self._check_row(entry, where)
        except ConfigError as exc:
            return exc
        return ConfigError(f"{where}: the unit cannot be read (it passes the unit schema, but a field has an "
                           "unexpected shape)")

    def _check_row(self, entry, where: str) -> None:
        if self._check is None:
            self._check = unit_checker()
        self._check(entry, where)

    def load(self, unit: Callable[[dict], dict] | None = None) -> dict:
        """The whole document in memory, units included (for readers of small runs); ``unit``:
        what to keep of each unit as it is read (a reader of large runs keeps a few fields)."""
        return {**self.head, "units": [u if unit is None else unit(u) for _, u in self]}

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        """(ref, unit) in file order."""
        if self.units is not None:
            yield from enumerate(self.units)
            return
        yield from self._stream()

    def _stream(self) -> Iterator[tuple[int, dict]]:
        path = self.units_path
        step = _step(self.count)
        digest = hashlib.sha256()
        loads = orjson.loads
        offset, line_no, rest = 0, 0, b""
        try:
            fh = open(path, "rb")
        except FileNotFoundError:
            raise ConfigError(f"{self.path}: field /units_file/path: the rows file {path.name} is missing "
                              f"beside it ({self.count} unit(s) expected)") from None
        with fh:
            while True:
                block = fh.read(BLOCK)
                if not block:
                    break
                digest.update(block)
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                for raw in lines:
                    line_no += 1
                    try:
                        entry = loads(raw)
                    except orjson.JSONDecodeError as exc:
                        raise ConfigError(f"{path}:{line_no}: not a JSON object ({exc}); the rows file is "
                                          "damaged: finish the run again") from None
                    if not isinstance(entry, dict):
                        raise ConfigError(f"{path}:{line_no}: expected a JSON object (one unit per line)")
                    if self.check and (line_no - 1) % step == 0:
                        self._check_row(entry, f"{path}:{line_no}")
                    yield offset, entry
                    offset += len(raw) + 1
        if rest.strip():
            raise ConfigError(f"{path}:{line_no + 1}: the last line has no newline: the rows file was cut off "
                              "while it was written; finish the run again")
        if line_no != self.count:
            raise ConfigError(f"{path}: {line_no} row(s), but {self.path.name} field /units_file/count says "
                              f"{self.count}: the rows file does not belong to this head or is incomplete")
        if self.sha256 and digest.hexdigest() != self.sha256:
            raise ConfigError(f"{path}: SHA-256 {digest.hexdigest()} differs from {self.path.name} field "
                              f"/units_file/sha256 {self.sha256}: the rows file was changed after the run finished")

    def entry(self, ref: int) -> dict:
        """The unit at ``ref`` (read again from the rows file for version 2)."""
        if self.units is not None:
            return self.units[ref]
        with open(self.units_path, "rb") as fh:
            fh.seek(ref)
            return orjson.loads(fh.readline())


def from_data(data: dict, path: Path | str = "results.json") -> ResultsRows:
    """Rows over a results document already in memory (version 1 layout); no checks."""
    head = {k: v for k, v in data.items() if k != "units"}
    units = data.get("units") or []
    return ResultsRows(Path(path), head, len(units), units=units, check=False)


def _read_head(path: Path):
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: results file not found (finish the run first)") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    return data


def open_results(path: Path | str, *, check: bool = True) -> ResultsRows:
    """Open a results.json of either layout; the head is read and checked now, the rows as they stream."""
    path = Path(path)
    data = _read_head(path)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in SUPPORTED:
        raise ConfigError(f"{path}: field /schema_version: results schema version {version!r} is not supported "
                          f"(this harness reads {list(SUPPORTED)}); re-run or convert that run")
    if version == 1:
        units = data.get("units")
        if check:
            sample = units[::_step(len(units), INLINE_SAMPLE_UNITS)] if isinstance(units, list) else units
            schema.check({**data, "units": sample}, RESULTS_V1, source=str(path))
        elif not isinstance(units, list) or not all(isinstance(u, dict) for u in units):
            raise ConfigError(f"{path}: field /units: expected a list of unit objects")
        return ResultsRows(path, {k: v for k, v in data.items() if k != "units"}, len(units), units=units,
                           check=False)
    if check:
        check_head(data, str(path))
    spec = _units_file(data, str(path))
    head = {k: v for k, v in data.items() if k != "units_file"}
    return ResultsRows(path, head, spec["count"], units_path=path.parent / spec["path"], sha256=spec["sha256"],
                       check=check)


def write_rows(path: Path, units) -> dict:
    """Write ``units`` as a rows file, one compact JSON object per line; return its ``units_file`` record.

    Written to a temporary file beside ``path``, synced and renamed, so the rows file is
    either complete or absent.
    """
    path = Path(path)
    digest = hashlib.sha256()
    count = 0
    with atomic_writer(path) as fh:
        for u in units:
            line = orjson.dumps(u, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS) + b"\n"
            digest.update(line)
            fh.write(line)
            count += 1
    return {"path": path.name, "count": count, "sha256": digest.hexdigest()}


def write_streamed(run_dir: Path, data: dict) -> Path:
    """A version 2 results.json head plus its rows file from a version 1 document (tests, benchmarks)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = write_rows(run_dir / UNITS_FILE, data["units"])
    head = {k: v for k, v in data.items() if k != "units"}
    head.update(schema_version=STREAMED_VERSION, units_file=spec)
    path = run_dir / "results.json"
    path.write_text(json.dumps(head, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
