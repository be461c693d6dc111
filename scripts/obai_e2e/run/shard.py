"""Splitting a run's units over CI runners (``run --shard K/N``).

Every runner computes the same split on its own, from the same inputs: the planned units
and, optionally, the latencies of an earlier run. The split is rendezvous hashing with
bounded loads: a unit goes to the shard that ranks highest for it (a hash of unit id and
shard number) unless that shard is already full, where "full" is 1.15 × the mean load
in expected seconds (or in units, without latencies). Units are placed in the order of
their own hash, so the split does not depend on the order of the cases file, and adding
one case moves only the few units whose shard filled up.

The plan hash names exactly what all shards must share; ``merge-runs`` refuses parts whose
hashes differ.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from ..base.errors import ConfigError, UsageError
from ..report.rows import open_results

SLACK = 0.15
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class ShardSpec:
    """Which part of how many this runner drives."""

    index: int
    total: int

    @classmethod
    def parse(cls, text: str) -> "ShardSpec":
        m = _SPEC.match(text or "")
        if not m:
            raise UsageError(f"--shard {text!r}: expected K/N, e.g. 2/3 (part K of N, counting from 1)")
        index, total = int(m.group(1)), int(m.group(2))
        if total < 1 or not 1 <= index <= total:
            raise UsageError(f"--shard {text!r}: K must be between 1 and N, and N at least 1")
        if total > 1000:
            raise UsageError(f"--shard {text!r}: at most 1000 shards")
        return cls(index, total)


def _h(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def assign(units: list[str], total: int, weights: dict[str, float] | None = None) -> dict[str, int]:
    """Shard number (1..total) of every unit; the same inputs give the same split everywhere."""
    if total == 1:
        return {u: 1 for u in units}
    w = {u: float((weights or {}).get(u, 1.0)) for u in units}
    capacity = (1 + SLACK) * sum(w.values()) / total
    load = [0.0] * (total + 1)
    out: dict[str, int] = {}
    for unit in sorted(units, key=lambda u: (_h(u), u)):
        ranked = sorted(range(1, total + 1), key=lambda k: (-_h(f"{unit}|{k}"), k))
        choice = next((k for k in ranked if load[k] + w[unit] <= capacity), None)
        if choice is None:  # a unit heavier than the slack: the least loaded shard takes it
            choice = min(ranked, key=lambda k: (load[k], ranked.index(k)))
        load[choice] += w[unit]
        out[unit] = choice
    return out


def unit_seconds(results_path: Path) -> dict[str, float]:
    """Expected seconds per unit from an earlier run's results.json (turn + async wait + follow-up)."""
    out: dict[str, float] = {}
    for _, entry in open_results(results_path, check=False):  # a unit at a time: only its seconds are kept
        lat = entry.get("latency") or {}
        total_ms = (lat.get("turn_ms") or 0) + (lat.get("followup_ms") or 0) + 1000 * (lat.get("wait_s") or 0)
        if total_ms > 0 and math.isfinite(total_ms):
            out[entry["unit_id"]] = total_ms / 1000
    return out


def weights_for(units: list[str], timings: Path | None) -> tuple[dict[str, float] | None, dict | None]:
    """(weights, a description of their source) from a results.json or run directory, or (None, None)."""
    if timings is None:
        return None, None
    path = Path(timings)
    path = path / "results.json" if path.is_dir() else path
    if not path.is_file():
        raise ConfigError(f"--shard-timings {timings}: no results.json there (give a finished run directory or "
                          "its results.json)")
    seconds = unit_seconds(path)
    known = [seconds[u] for u in units if u in seconds]
    fallback = median(known) if known else 1.0
    weights = {u: round(seconds.get(u, fallback), 3) for u in units}
    return weights, {"source": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                     "known_units": len(known)}


def plan_hash(*, cases_sha256: str, filters: dict, repeats: dict, units: list[str], target_sha256: str,
              weights: dict | None) -> str:
    """What every shard of one run must share, as one hash."""
    body = {"cases_sha256": cases_sha256, "filters": filters, "repeats": repeats, "units": units,
            "target_sha256": target_sha256, "weights": weights}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
