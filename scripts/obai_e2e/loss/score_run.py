"""Scoring one run directory: suite.json, and with a baseline TOP-REGRESSIONS.md and comparison.json.

The baseline is always re-scored from its results.json with the current catalog in mode
B (nothing is re-executed, so categories that need execution are unbewertbar on that
side): raw scores of different catalog versions are incommensurable, re-scoring makes
them comparable. A bare suite.json is accepted as a baseline only as a pointer to the
results.json beside it, and only when it was scored with the current catalog version.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from ..base.errors import ConfigError, UsageError, WriteOnceViolation
from ..base.fsutil import dumps_json, write_once
from ..config.target import TargetConfig
from ..report.rows import open_results
from .catalog import Catalog, load_catalog
from .compare import compare
from .plan import load_plan
from .reports import append_history, write_comparison, write_top_regressions
from .score import check_suite, score

SUITE_FILE = "suite.json"
TOP_FILE = "TOP-REGRESSIONS.md"
COMPARISON_FILE = "comparison.json"
MAX_LISTED = 10


def _is_suite(data) -> bool:
    return isinstance(data, dict) and (data.get("kind") == "obai-e2e-suite"
                                       or ("partitions" in data and "units" not in data))


def baseline_results_path(baseline: Path, catalog: Catalog) -> Path:
    """The results.json to re-score for ``baseline`` (a run directory, a results.json or a suite.json)."""
    baseline = Path(baseline)
    if baseline.is_dir():
        path = baseline / "results.json"
        if not path.exists():
            raise ConfigError(f"{baseline}: the baseline run has no results.json (finish that run first, "
                              "or pass a frozen reference set's results.json)")
        return path
    if not baseline.exists():
        raise ConfigError(f"{baseline}: baseline not found (pass a run directory or its results.json)")
    try:
        data = json.loads(baseline.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{baseline}: the baseline is not valid JSON ({exc})") from None
    if not _is_suite(data):
        return baseline
    version = data.get("catalog_version")
    beside = baseline.parent / "results.json"
    if version != catalog.version:
        raise ConfigError(
            f"{baseline}: field /catalog_version: this suite.json was scored with catalog {version!r}, the current "
            f"catalog is {catalog.version!r}; scores of different catalog versions are incommensurable. Pass the "
            f"baseline run's results.json (or its run directory, or a frozen reference set) so it is re-scored "
            f"with {catalog.version!r}")
    if not beside.exists():
        raise ConfigError(f"{baseline}: a bare suite.json cannot be re-scored in mode B; pass the baseline run's "
                          "results.json (or a frozen reference set) instead")
    return beside


@contextmanager
def _once(path: Path):
    """A clearer message when a write-once file of the loss layer exists with other content."""
    try:
        yield
    except WriteOnceViolation:
        raise WriteOnceViolation(
            f"{path} already exists with different content: {path.name} is written once per run; it was left "
            "unchanged (was the run scored before with another catalog, plan or baseline?)") from None


def score_run(run_dir: Path, *, config: TargetConfig | None = None, baseline: Path | None = None, catalog_path: Path | None = None,
              plan_path: Path | None = None, history_root: Path | None = None) -> dict:
    """Score ``run_dir``; compare with ``baseline`` when given; append LOSS-HISTORY.md."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} does not exist")
    catalog_path = catalog_path or (config.catalog if config is not None else None)
    if catalog_path is None:
        raise ConfigError("no loss catalog: set run.catalog in the target configuration or pass --catalog")
    catalog = load_catalog(catalog_path)
    plan = load_plan(plan_path)
    results = open_results(run_dir / "results.json")
    privacy = config.privacy if config is not None else None

    new = score(results, catalog, plan)
    suite_path = run_dir / SUITE_FILE
    check_suite(new.suite, source=str(suite_path))
    with _once(suite_path):
        write_once(suite_path, dumps_json(new.suite))

    comparison, rows, base_path = None, [], None
    top_path = comparison_path = None
    if baseline is not None:
        base_path = baseline_results_path(baseline, catalog)
        base = score(open_results(base_path), catalog, plan, mode="B")
        comparison = compare(new, base)
        top_path, comparison_path = run_dir / TOP_FILE, run_dir / COMPARISON_FILE
        with _once(top_path):
            rows = write_top_regressions(top_path, comparison, new, privacy)
        with _once(comparison_path):
            write_comparison(comparison_path, comparison, new, rows)
    history_path, appended = append_history(new.suite, comparison, history_root)

    suite = new.suite
    return {
        "status": "scored",
        "run_dir": str(run_dir),
        "run_id": suite["run_id"],
        "catalog_version": catalog.version,
        "mode": suite["mode"],
        "provenance": suite["provenance"],
        "suite_score": suite["suite_score"],
        "suite_scores": suite["suite_scores"],
        "suite_status": suite["suite_status"],
        "completion_rate": suite["completion_rate"],
        "coverage": suite["coverage"],
        "sample_budget": suite["sample_budget"],
        "suite_json": str(suite_path),
        "baseline": None if comparison is None else {"results": str(base_path), "run_id": comparison.baseline_run_id},
        "compared_cells": comparison.k if comparison else 0,
        "z": comparison.z if comparison else None,
        "findings": len(comparison.findings) if comparison else 0,
        "top_findings": [{"partition": r["partition"], "category": r["category"], "ci_low": r["ci_low"],
                          "delta": r["delta"]} for r in rows[:MAX_LISTED]],
        "top_regressions": str(top_path) if top_path else None,
        "comparison": str(comparison_path) if comparison_path else None,
        "loss_history": str(history_path),
        "history_appended": appended,
        "warnings": suite["warnings"][:MAX_LISTED],
    }
