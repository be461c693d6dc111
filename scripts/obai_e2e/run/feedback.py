"""Verdicts back on the traces: each unit's verdict and loss categories as Opik feedback scores.

Enabled by ``report.feedback_scores: true`` in target.yaml. Written through the opik SDK
(``log_traces_feedback_scores``), so a team can filter traces by regression in Opik's own
UI; the local store keeps and returns them too. A backend that refuses them is reported,
never fatal: the run is already recorded.
"""
from __future__ import annotations

from pathlib import Path

from ..config.target import TargetConfig
from ..loss.catalog import load_catalog
from ..loss.units import UnitScorer
from ..report.results import read_results_json
from ..trace.backend import client, connect

VERDICT_SCORE = {"pass": 1.0, "needs_review": 0.5, "fail": 0.0}  # inconclusive: nothing is known, no score
VERDICT_NAME = "e2e_verdict"
LOSS_PREFIX = "e2e_loss_"


def scores_for(results: dict, project: str, scorer: UnitScorer | None = None) -> list[dict]:
    """The feedback scores of a run: one verdict score per trace, and each scorable loss category."""
    run_id = (results.get("run") or {}).get("run_id", "")
    out = []
    for e in results.get("units") or []:
        value = VERDICT_SCORE.get(e.get("verdict"))
        if value is None or not e.get("trace_ids"):
            continue
        reason = f"{run_id} {e['unit_id']}: {e['verdict']}" + (f" ({', '.join(e.get('reasons') or [])})"
                                                               if e.get("reasons") else "")
        losses = []
        if scorer is not None:
            scored = scorer.score(e)
            losses = [(c.id, loss) for c, loss in zip(scorer.catalog.categories, scored.losses) if loss is not None]
        for trace_id in e["trace_ids"]:
            out.append({"id": trace_id, "name": VERDICT_NAME, "value": value, "reason": reason[:500],
                        "project_name": project})
            out += [{"id": trace_id, "name": LOSS_PREFIX + cat, "value": round(loss, 6), "project_name": project}
                    for cat, loss in losses]
    return out


def write_feedback(config: TargetConfig, run_dir: Path) -> dict:
    """Write the run's feedback scores to its traces; a summary, with the error when the backend refused."""
    results = read_results_json(Path(run_dir) / "results.json")
    scorer = None
    if config.catalog is not None and Path(config.catalog).exists():
        scorer = UnitScorer(load_catalog(config.catalog), (results.get("run") or {}).get("mode", "A"))
    try:
        backend = connect(config, start_local=False)
        scores = scores_for(results, backend.project, scorer)
        if scores:
            c = client(backend)
            c.log_traces_feedback_scores(scores=scores)
            c.flush()
    except Exception as exc:  # noqa: BLE001 - the run stands; the write-back is reported
        return {"status": "failed", "message": f"{type(exc).__name__}: {exc}"[:300]}
    return {"status": "written", "scores": len(scores), "traces": len({s["id"] for s in scores})}
