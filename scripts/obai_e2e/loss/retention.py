"""Retention of korpus data: run directories with korpus units are removed after ``retention_days``.

Only directories shaped like a run (``<runs root>/<YYYY-MM-DD>/<HHMMSS>/`` with a run.json)
whose provenance is korpus or mixed are considered; their age is taken from run.json's
``created_at``. A ``runs/latest`` link that pointed at a removed run is removed too.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import ConfigError
from ..base.paths import runs_root

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{6}$")
KORPUS_PROVENANCES = ("korpus", "mixed")


def expired_runs(root: Path, retention_days: int, now: datetime) -> list[dict]:
    """Korpus/mixed runs under ``root`` created more than ``retention_days`` before ``now``."""
    cutoff = now - timedelta(days=retention_days)
    out = []
    if not root.is_dir():
        return out
    for day in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and _DATE.match(p.name)):
        for run_dir in sorted(p for p in day.iterdir() if p.is_dir() and not p.is_symlink() and _TIME.match(p.name)):
            try:
                meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
                created = parse_iso(meta["created_at"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not a run we can date: never removed
            if meta.get("provenance") in KORPUS_PROVENANCES and created < cutoff:
                out.append({"run_dir": str(run_dir), "run_id": meta.get("run_id"),
                            "provenance": meta["provenance"], "created_at": meta["created_at"]})
    return out


def prune_korpus(privacy, *, dry_run: bool = False, root: Path | None = None, now: datetime | None = None) -> dict:
    if privacy is None:
        raise ConfigError("the target configuration has no privacy section, so korpus retention is undefined; "
                          "add privacy: {retention_days: N, quote_allowed: true|false}")
    root = Path(root) if root else runs_root()
    now = now or utc_now()
    expired = expired_runs(root, privacy.retention_days, now)
    latest = root / "latest"
    latest_target = latest.resolve() if latest.is_symlink() else None
    removed = []
    for item in expired:
        run_dir = Path(item["run_dir"])
        if not dry_run:
            shutil.rmtree(run_dir)
            if latest_target is not None and latest_target == run_dir.resolve():
                os.unlink(latest)
            try:
                run_dir.parent.rmdir()  # the date folder, when it is now empty
            except OSError:
                pass
        removed.append(item)
    return {"status": "dry_run" if dry_run else "pruned", "retention_days": privacy.retention_days,
            "cutoff": iso(now - timedelta(days=privacy.retention_days)), "runs_root": str(root),
            "removed" if not dry_run else "would_remove": removed, "count": len(removed)}
