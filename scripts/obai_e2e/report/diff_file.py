"""diff.json written and read a unit at a time.

Enters: this run's units (their diff fields, in run order) and the baseline's results (a
run directory or results.json, either layout). Leaves: diff.json, written once and
schema-checked, with the bytes ``dumps_json`` gives the whole document, though no more than
one unit is held at a time (the units go to a scratch file until the counts that precede
them are known); and the :class:`~.diff.DiffDigest` that results.json, report.md and the
CLI show. Read back, diff.json gives its digest or its units one at a time.
"""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from jsonschema import Draft202012Validator

from ..base import schema
from ..base.errors import ConfigError
from ..base.fsutil import write_once_from
from .diff import Baseline, CaseTally, DiffBuilder, DiffDigest, diff_fields
from .rows import open_results
from .streamed_json import item_text, read_document, write_encoded

DIFF_FILE = "diff.json"
DIFF_SCHEMA = "diff.v1.schema.json"
UNITS = "units"
_LENGTH = struct.Struct(">Q")


def results_path_of(path: Path) -> Path:
    """A run directory's results.json, or the path itself when it names a file."""
    path = Path(path)
    return path / "results.json" if path.is_dir() else path


def baseline_of(path: Path | None, keys: Iterable[str] = ()) -> Baseline | None:
    """The baseline results at ``path`` as an index of unit ids (None without one); the stochastic cases
    in ``keys`` get their verdicts tallied."""
    if path is None:
        return None
    rows = open_results(results_path_of(path), check=False)
    return Baseline.of(rows.run, rows.head.get("totals"), iter(rows), lambda ref: diff_fields(rows.entry(ref)), keys)


def _item_checker(source: str):
    """A function (item, index) raising ConfigError naming the unit's pointer for a unit the schema refuses."""
    item_schema = schema.load_schema(DIFF_SCHEMA)["properties"][UNITS]["items"]
    fast = schema.fast_validator_for(item_schema)
    slow = Draft202012Validator(item_schema)

    def check(item: dict, n: int) -> None:
        if fast is not None and fast.is_valid(item):
            return
        error = schema.first_error(slow, item)
        if error is not None:
            raise ConfigError(f"{source}: field /{UNITS}/{n}{schema.pointer(error.absolute_path)}: "
                              f"{schema.describe(error)}")
    return check


def write_run_diff(run_dir: Path, run_id: str, entries: Iterable[dict], tallies: dict[str, CaseTally],
                   baseline: Path | None, totals: dict) -> DiffDigest:
    """Write ``run_dir``/diff.json for ``entries`` (diff fields, run order) against ``baseline``; its digest.

    ``tallies``: this run's stochastic cases (diff.tally_stochastic over the same entries);
    ``totals``: this run's (results.json's) — the baseline's come from its head.
    """
    run_dir = Path(run_dir)
    path = run_dir / DIFF_FILE
    base = baseline_of(baseline, tallies)
    builder = DiffBuilder(run_id, base, tallies)
    check = _item_checker(str(path))
    with tempfile.TemporaryFile(dir=run_dir, prefix=".diff-units.", suffix=".tmp") as spool:
        n = 0
        for item in _all(builder, entries):
            check(item, n)
            _put(spool, item_text(item))
            n += 1
        head = builder.head()
        if head["baseline"] is not None:
            head["baseline"] = {**head["baseline"], "results": str(results_path_of(baseline))}
        head["totals"] = {"run": totals, "baseline": base.totals if base is not None else None}
        schema.check({**head, UNITS: []}, DIFF_SCHEMA, source=str(path))
        spool.seek(0)
        write_once_from(path, lambda fh: write_encoded(fh, head, UNITS, _taken(spool)))
    return builder.digest


def _all(builder: DiffBuilder, entries: Iterable[dict]) -> Iterator[dict]:
    for e in entries:
        yield builder.add(e)
    yield from builder.removed()


def _put(fh: BinaryIO, data: bytes) -> None:
    fh.write(_LENGTH.pack(len(data)))
    fh.write(data)


def _taken(fh: BinaryIO) -> Iterator[bytes]:
    while True:
        size = fh.read(_LENGTH.size)
        if not size:
            return
        yield fh.read(_LENGTH.unpack(size)[0])


def read_units(path: Path) -> tuple[dict, Iterator[dict[str, Any]]]:
    """(diff.json's keys but ``units``, its units one at a time)."""
    return read_document(Path(path), UNITS)


def read_digest(path: Path) -> DiffDigest | None:
    """The digest of a run's diff.json, or None when it has none."""
    path = Path(path)
    if not path.exists():
        return None
    head, units = read_units(path)
    return DiffDigest.of(head, units)
