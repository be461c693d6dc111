"""The units of report.html, written into its data block a unit at a time.

Enters: the run's results rows (one at a time), where report.md's detail blocks are, the
case set. Leaves: the data block's JSON, already escaped for the page (``html_unit.embed_text``),
written into a file object; and :class:`UnitsBlock`, what the rest of the page needs of the
units (units per feature, the first units with unasked questions).

A run of up to ``FULL_UNITS`` units has every unit's card data in the page, as before. In a
larger run the units that did not pass come in full, in run order, up to ``DETAIL_UNITS``
of them and ``DETAIL_BYTES`` of their data; every other unit is a compact row
(``html_unit.unit_row``: id, verdict, feature, codes, the start of its query, latency, its
trace pages, its labels as an index into ``label_sets``). The client script makes each row a
unit of the table whose card links its trace pages and says where the rest of it is, so every
unit is counted, filtered, searched and reached by its anchor (``#unit-<id>``, which its
trace page links back to), while the page stays tens of megabytes at 100,000 units.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable

from ..config.cases import CaseSet
from .html_inputs import DetailBlocks
from .html_unit import dumps, embed_text, labels_of, unit_row, unit_view
from .report_md import NOT_ASKED_SHOWN
from .trace_pages import page_links

VERDICT_LABELS = {"pass": "pass", "fail": "fail", "needs_review": "needs review", "inconclusive": "inconclusive",
                  "not_judged": "not judged"}
PAGE_SIZE = 100  # rows (a unit, or a case's repeats) per page of the client script
FULL_UNITS = 2_000       # a run this small has every unit in full
DETAIL_UNITS = 2_000     # units in full in a larger run (those that did not pass, in run order)
DETAIL_BYTES = 24 << 20  # and at most this much of their data


@dataclass
class UnitsBlock:
    """What the page shows of its units outside the data block."""

    units: int = 0
    full: int = 0
    features: dict[str, int] = field(default_factory=dict)
    not_asked: list[tuple[str, list[str]]] = field(default_factory=list)  # the first NOT_ASKED_SHOWN


class _Policy:
    """Which units come in full: all in a small run, else those that did not pass while the budget lasts."""

    def __init__(self, total: int):
        self.all = total <= FULL_UNITS
        self.units = 0
        self.bytes = 0

    def full(self, entry: dict) -> bool:
        if self.all:
            return True
        return entry.get("verdict") != "pass" and self.units < DETAIL_UNITS and self.bytes < DETAIL_BYTES

    def took(self, size: int) -> None:
        self.units += 1
        self.bytes += size


def write_units(out: BinaryIO, entries: Iterable[dict], run_dir: Path, *, total: int, blocks: DetailBlocks,
                case_set: CaseSet | None) -> UnitsBlock:
    """Write the data block's JSON for ``entries`` (``total`` of them, the count results.json gives) into
    ``out``; the units go to a scratch file first, since the label sets come before them."""
    cases = {c.id: c for c in case_set.cases} if case_set is not None else {}
    policy = _Policy(total)
    info = UnitsBlock()
    label_sets: dict[tuple, int] = {}
    with tempfile.TemporaryFile() as spool:
        for entry in entries:
            uid = entry.get("unit_id", "")
            pages = page_links(run_dir, entry)
            if policy.full(entry):
                piece = dumps(unit_view(entry, blocks.get(uid), cases.get(entry.get("case_id", "")), pages))
                policy.took(len(piece))
                info.full += 1
            else:
                labels = labels_of(entry)
                piece = dumps(unit_row(entry, pages, label_sets.setdefault(labels, len(label_sets))))
            spool.write((("," if info.units else "") + embed_text(piece)).encode("utf-8"))
            info.units += 1
            feature = entry.get("feature", "")
            info.features[feature] = info.features.get(feature, 0) + 1
            if entry.get("not_asked") and len(info.not_asked) < NOT_ASKED_SHOWN:
                info.not_asked.append((uid, [str(q) for q in entry["not_asked"]]))
        _write_block(out, spool, label_sets)
    return info


def _write_block(out: BinaryIO, spool: BinaryIO, label_sets: dict[tuple, int]) -> None:
    """``{"label_sets": …, "page_size": …, "units": [<spool>], "verdict_labels": …}`` in the page's JSON form
    (keys sorted; ``label_sets`` only when some unit is a compact row)."""
    head = {"page_size": PAGE_SIZE, "verdict_labels": VERDICT_LABELS}
    if label_sets:
        head["label_sets"] = [[list(pair) for pair in labels] for labels in label_sets]
    before = {k: v for k, v in head.items() if k < "units"}
    after = {k: v for k, v in head.items() if k > "units"}
    opening = dumps(before)[:-1] + ("," if before else "") + '"units":['
    out.write(embed_text(opening).encode("utf-8"))
    spool.seek(0)
    shutil.copyfileobj(spool, out, 1 << 20)
    out.write(embed_text("]," + dumps(after)[1:]).encode("utf-8"))
