"""Building results.json data for the loss layer's tests from real units of a demo run.

``tests/loss/data/templates.json`` holds three units of a real run (runs/2026-11-29/182418)
of the demo target; ``unit()`` copies one and sets what a test varies: ids, labels,
provenance, verdict, tripped rules with evidence, judge answers and panel ratings.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from obai_e2e.base.yamlio import load_yaml
from obai_e2e.loss.catalog import parse_catalog
from obai_e2e.loss.plan import parse_plan
from obai_e2e.report.results import summarize

DATA = Path(__file__).parent / "data"
TEMPLATES = json.loads((DATA / "templates.json").read_text(encoding="utf-8"))
TEMPLATE = {u["unit_id"]: u for u in TEMPLATES["units"]}


def unit(unit_id: str, *, case_id: str | None = None, repeat: int = 1, labels: dict | None = None,
         provenance: str = "synthetic", verdict: str | None = None, trips=(), answers: dict | None = None,
         ratings: dict | None = None, panel: dict | None = None, template: str = "MD1", mode: str = "A",
         override: dict | None = None) -> dict:
    """One results.json unit; ``trips`` is [(code or [codes], status, evidence list)]."""
    u = copy.deepcopy(TEMPLATE[template])
    u["unit_id"] = unit_id
    u["case_id"] = case_id or unit_id.split(".r")[0]
    u["repeat"] = repeat
    u["labels"] = dict(labels if labels is not None else u["labels"])
    u["provenance"] = provenance
    u["mode"] = mode
    for code, status, evidence in trips:
        codes = code if isinstance(code, list) else None
        first = codes[0] if codes else code
        family = first.split(":")[0]
        outcome = {"rule": family, "layer": 1, "status": status, "code": None if codes else code,
                   "detail": f"{first} tripped", "evidence": list(evidence)}
        if codes:
            outcome["codes"] = codes
        u["rule_outcomes"].append(outcome)
    if verdict is None:
        statuses = [s for _, s, _ in trips]
        verdict = "fail" if "fail" in statuses else ("needs_review" if statuses else "pass")
    u["verdict"] = verdict
    if verdict == "inconclusive":
        u["rule_outcomes"] = []
        u["reasons"] = ["trace_not_found"]
    u["answers"] = dict(answers or {})
    if ratings is not None:
        u["judge_panel"] = {"ratings": ratings, **(panel or {})}
    elif panel is not None:
        u["judge_panel"] = panel
    u["override"] = override
    return u


def ev(excerpt: str, span_id: str | None = "span-1", source: str = "trace") -> dict:
    return {"excerpt": excerpt, "span_id": span_id, "source": source}


def results(units: list[dict], *, run_id: str = "2026-12-01/120000", mode: str = "A",
            provenance: str | None = None, created_at: str = "2026-12-01T12:00:00.000000Z",
            catalog_version: str | None = None) -> dict:
    """A results.json document (schema version 1) around ``units``."""
    run = copy.deepcopy(TEMPLATES["run"])
    provs = {u["provenance"] for u in units}
    run.update(run_id=run_id, mode=mode, created_at=created_at, catalog_version=catalog_version,
               provenance=provenance or (provs.pop() if len(provs) == 1 else "mixed"))
    summary = summarize(units)
    return {"schema_version": 1, "kind": "obai-e2e-results", "run": run, "summary": summary, "units": units,
            "disabled": []}


def write_results(run_dir: Path, data: dict) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "results.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    return path


def catalog(categories: list[dict], version: str = "v1", source: str = "test-catalog.json"):
    return parse_catalog(json.dumps({"version": version, "categories": categories}), source)


def catalog_text(categories: list[dict], version: str = "v1") -> str:
    return json.dumps({"version": version, "categories": categories}, indent=1)


def cat(id_: str, weight, codes, type_: str = "deterministic", max_=1, **extra) -> dict:
    return {"id": id_, "weight": weight, "type": type_, "max": max_, "codes": list(codes), **extra}


HOPS = """\
hops:
  - id: harness-cli
    from: harness
    to: cli
    signal: exit code
    correct: exits 0
    flake: one timeout
    real_error: always times out
"""


def plan(tmp_path: Path, body: str, name: str = "plan.yaml"):
    """A plan from YAML ``body`` (hops are added when the body has none)."""
    text = "version: 1\n" + body + ("" if "hops:" in body else HOPS)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    data, lines = load_yaml(path)
    return parse_plan(data, lines, text, str(path), path)
