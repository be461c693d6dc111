"""The holdout ledger (``catalogs/holdout-ledger.json``): every open of a holdout set, in order.

Read by the freeze (a freeze with a holdout result may not change) and by the holdout
protocol, which appends the one open.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..base.fsutil import atomic_write_json
from ..base.paths import bundle_root

LEDGER = "catalogs/holdout-ledger.json"
LEDGER_VERSION = 1


def ledger_path(root: Path | None = None) -> Path:
    return (root or bundle_root()) / LEDGER


def ledger_entries(root: Path | None = None) -> list[dict]:
    path = ledger_path(root)
    if not path.exists():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get("opens", [])


def append_entry(entry: dict, root: Path | None = None) -> None:
    data = {"schema_version": LEDGER_VERSION, "opens": ledger_entries(root) + [entry]}
    atomic_write_json(ledger_path(root), data)


def holdout_result_exists(entry: dict) -> bool:
    run = entry.get("holdout_run")
    return bool(run) and (Path(run) / "results.json").exists()
