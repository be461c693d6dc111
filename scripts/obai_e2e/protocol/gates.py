"""Gates: conditions over a finished run, declared in a frozen file and evaluated mechanically.

The gate file (``catalogs/gates.yaml``) names gates (``development``, ``holdout``) and
their conditions. ``evaluate`` checks each against the run's results, loss-layer outputs
and judge panel, and the result is written once to ``<run>/gate-<name>.json`` together
with the freeze hash it was evaluated under and its attestation (seal.py): the run's seal hash
and, with OBAI_E2E_SEAL_KEY set, a signature, so a gate result written or edited by hand is
detected. A failed development gate stops the protocol: the holdout stays sealed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

from ..base import schema
from ..base.errors import UsageError
from ..base.fsutil import dumps_json, write_once
from ..base.paths import bundle_root
from ..base.yamlio import load_yaml
from ..report.report_md import read_rows
from ..report.results import load_results
from .freeze import current_freeze_hash
from ..rundir.meta import load_run
from .seal import attest, require_intact

GATES_FILE = "catalogs/gates.yaml"
PASS, FAIL, SKIP = "pass", "fail", "skipped"


@dataclass
class Check:
    id: str
    status: str
    detail: str

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "detail": self.detail}


def load_gates(path: Path | None = None) -> dict:
    path = Path(path) if path else bundle_root() / GATES_FILE
    data, lines = load_yaml(path, label=str(path))
    schema.check(data, "gates.schema.json", source=str(path), lines=lines)
    return data


def _units(results: dict, case_set, where: dict | None) -> list[dict]:
    units = results["units"]
    if not where:
        return units
    out = []
    for u in units:
        try:
            case = case_set.by_id(u["case_id"])
        except Exception:  # noqa: BLE001 - a case removed since the run: it matches no filter
            continue
        if "smoke" in where and case.smoke != where["smoke"]:
            continue
        if "feature" in where and case.feature != where["feature"]:
            continue
        out.append(u)
    return out


def _missing(cond: dict, what: str) -> Check:
    status = SKIP if cond.get("if_missing", "fail") == "skip" else FAIL
    return Check(cond["id"], status, f"{what} is missing")


def c_no_verdict(cond, run_dir, results, case_set) -> Check:
    bad = [u["unit_id"] for u in _units(results, case_set, cond.get("where")) if u["verdict"] in cond["verdicts"]]
    if bad:
        return Check(cond["id"], FAIL, f"{len(bad)} unit(s) with {'/'.join(cond['verdicts'])}: {', '.join(bad[:20])}")
    return Check(cond["id"], PASS, f"no {'/'.join(cond['verdicts'])} among {len(_units(results, case_set, cond.get('where')))} unit(s)")


def c_max_share(cond, run_dir, results, case_set) -> Check:
    units = _units(results, case_set, cond.get("where"))
    hit = sum(1 for u in units if u["verdict"] in cond["verdicts"])
    share = hit / len(units) if units else 0.0
    ok = share <= cond["value"]
    return Check(cond["id"], PASS if ok else FAIL, f"{'/'.join(cond['verdicts'])} share {share:.3f} (limit {cond['value']})")


def c_min_completion(cond, run_dir, results, case_set) -> Check:
    s = results["summary"]
    done = s["pass"] + s["fail"] + s["needs_review"]
    rate = done / s["total"] if s["total"] else 0.0
    return Check(cond["id"], PASS if rate >= cond["value"] else FAIL, f"completion {rate:.3f} (floor {cond['value']})")


def c_no_top_regressions(cond, run_dir, results, case_set) -> Check:
    path = Path(run_dir) / "TOP-REGRESSIONS.md"
    if not path.exists():
        return _missing(cond, "TOP-REGRESSIONS.md (no baseline comparison)")
    from ..loss.reports import read_top_rows

    rows = read_top_rows(path.read_text(encoding="utf-8"))
    if rows:
        return Check(cond["id"], FAIL, f"{len(rows)} provable regression(s) in TOP-REGRESSIONS.md")
    return Check(cond["id"], PASS, "no provable regression")


def c_min_judge_agreement(cond, run_dir, results, case_set) -> Check:
    rounds = sorted((Path(run_dir) / "judging").glob("*/aggregate.json"))
    if not rounds:
        return _missing(cond, "a judge panel aggregate")
    agg = json.loads(rounds[-1].read_text(encoding="utf-8"))
    metric = cond.get("metric", "percent")
    overall = agg.get("agreement", {}).get("overall", {})
    value = overall.get("fleiss_kappa" if metric == "kappa" else "percent_agreement")
    if value is None:
        return _missing(cond, f"the panel's {metric} agreement")
    return Check(cond["id"], PASS if value >= cond["value"] else FAIL, f"{metric} agreement {value:.3f} (floor {cond['value']})")


def _latest_calibration(run_dir) -> dict | None:
    """The calibration of the newest aggregated round, or None."""
    from ..judge.panel.rounds import round_names

    for name in reversed(round_names(run_dir)):
        path = Path(run_dir) / "judging" / name / "aggregate.json"
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8")).get("calibration") or {}
    return None


def c_min_judge_accuracy(cond, run_dir, results, case_set) -> Check:
    """Each judge's (or the majority's) worst per-choice recall on the round's fixed calibration items, as an
    exact fraction, at least ``value``; a choice with fewer than ``min_items`` items is a missing input."""
    from ..judge.panel.calibration import CALIBRATION_VERSION, exact_of, fewest_items, share_text, worst_recall

    cal = _latest_calibration(run_dir)
    if cal is None:
        return _missing(cond, "a judge panel aggregate")
    question = cond.get("question")
    if cal.get("version") != CALIBRATION_VERSION or not cal.get("n"):
        return _missing(cond, "a graded round (fixed calibration items mixed into the newest round)")
    if question and question not in cal["majority"]["by_question"]:
        return _missing(cond, f"fixed calibration items of {question}")
    fewest, need = fewest_items(cal, question), cond.get("min_items", 1)
    what = f"fixed items{' of ' + question if question else ''}"
    if fewest < need:
        return _missing(cond, f"a calibration set with at least {need} {what} per choice (the fewest has {fewest})")
    floor = Fraction(str(cond["value"]))
    who = ["majority"] if cond.get("of") == "majority" else sorted(cal["judges"])
    worst = {w: worst_recall(cal, w, question) for w in who}

    def shown(w: str) -> str:
        r = worst[w]
        return f"{w} {share_text(r)} on {r['question']} {r['choice']}" if r.get("question") else f"{w} n/a"

    below = [shown(w) for w in who if exact_of(worst[w]) is None or exact_of(worst[w]) < floor]
    if below:
        return Check(cond["id"], FAIL, f"worst per-choice recall below {cond['value']} on {cal['items']} {what}: "
                                       f"{', '.join(below)}")
    return Check(cond["id"], PASS, f"worst per-choice recall on {cal['items']} {what}: "
                                   f"{', '.join(shown(w) for w in who)} (floor {cond['value']})")


def c_verdicts_valid(cond, run_dir, results, case_set) -> Check:
    from ..base.schema import load_schema
    from ..judge.contract import problems
    from ..judge.verdict import SCHEMAS

    bad = []
    for path in sorted(Path(run_dir).glob("*.verdict.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        version = record.get("schema_version")
        if version not in SCHEMAS:
            bad.append(f"{path.name}: unknown schema version {version!r}")
            continue
        submitted = {k: v for k, v in record.items() if k not in ("case_id", "feature", "mechanical", "repair", "judge_panel")}
        found = problems(submitted, load_schema(SCHEMAS[version]))
        if found:
            bad.append(f"{path.name}: {found[0]}")
    if bad:
        return Check(cond["id"], FAIL, "; ".join(bad[:5]))
    return Check(cond["id"], PASS, "every verdict valid under its schema version")


def c_report_complete(cond, run_dir, results, case_set) -> Check:
    ids = [r["ID"] for r in read_rows(Path(run_dir) / "report.md")]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    missing = [u["unit_id"] for u in results["units"] if u["unit_id"] not in ids]
    if dupes or missing:
        return Check(cond["id"], FAIL, f"report.md duplicates {dupes}, missing {missing[:10]}")
    return Check(cond["id"], PASS, f"{len(ids)} rows, one per unit")


KINDS: dict[str, Callable[..., Check]] = {
    "no_verdict": c_no_verdict,
    "max_share": c_max_share,
    "min_completion": c_min_completion,
    "no_top_regressions": c_no_top_regressions,
    "min_judge_agreement": c_min_judge_agreement,
    "min_judge_accuracy": c_min_judge_accuracy,
    "verdicts_valid": c_verdicts_valid,
    "report_complete": c_report_complete,
}


def evaluate(run_dir: Path, name: str, case_set, *, gates: dict | None = None) -> dict:
    gates = gates or load_gates()
    if name not in gates["gates"]:
        raise UsageError(f"no gate named {name!r} in {GATES_FILE} (known: {', '.join(gates['gates'])})")
    gate = gates["gates"][name]
    conditions = gate.get("conditions") or gates["gates"][gate["same_as"]]["conditions"]
    results = load_results(Path(run_dir) / "results.json")
    checks = [KINDS[c["kind"]](c, run_dir, results, case_set) for c in conditions]
    passed = all(c.status != FAIL for c in checks)
    return {"schema_version": 1, "gate": name, "run_id": results["run"]["run_id"], "passed": passed,
            "freeze_hash": current_freeze_hash(), "conditions": [c.to_json() for c in checks]}


def gate(run_dir: Path, name: str, case_set, *, verified: bool = False) -> dict:
    """Verify the sealed run, then evaluate and write ``gate-<name>.json`` once; an identical re-evaluation is a
    no-op. Nothing of the run is read before its seal (and, with the key set, its signature) stood: a file edited
    after the seal refuses the gate (FrozenArtifactChanged, exit 6) naming it. The gate definitions are the run's
    own copy (rundir/inputs.py), the bundle's for a run made before runs kept their inputs. ``verified``: the
    caller verified the run under the lock it holds, before it read the cases."""
    if not verified:
        require_intact(run_dir, f"the {name} gate")
    definitions = load_gates(load_run(run_dir).input_path(Path(run_dir), "gates"))
    result = attest(run_dir, evaluate(run_dir, name, case_set, gates=definitions))
    path = Path(run_dir) / f"gate-{name}.json"
    write_once(path, dumps_json(result))
    return {**result, "gate_file": str(path)}


def describe_failures(result: dict) -> list[str]:
    return [f"{c['id']}: {c['detail']}" for c in result["conditions"] if c["status"] == FAIL]
