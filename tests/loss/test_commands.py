"""score-loss, plan-loss and prune-korpus through the CLI: files written, JSON out, errors as messages."""
import json

import pytest
from obai_e2e.cli import main

from .helpers import cat, catalog_text, plan, results, unit, write_results
from .test_compare import PLAN, base_units, new_units

CATS = [cat("routing", 0.4, ["routing.*"]), cat("output", 0.4, ["specialist.*"]), cat("guard", 0.2, ["guardrail.*"])]


@pytest.fixture
def setup(tmp_path, runs_root):
    cat_path = tmp_path / "loss-catalog.v1.json"
    cat_path.write_text(catalog_text(CATS))
    plan(tmp_path, PLAN)  # writes tmp_path/plan.yaml and checks it
    new_dir = runs_root / "2026-12-02" / "090000"
    base_dir = runs_root / "2026-12-01" / "090000"
    write_results(new_dir, results(new_units(), run_id="2026-12-02/090000", created_at="2026-12-02T09:00:00Z"))
    write_results(base_dir, results(base_units(), run_id="2026-12-01/090000", created_at="2026-12-01T09:00:00Z"))
    return {"catalog": cat_path, "plan": tmp_path / "plan.yaml", "new": new_dir, "base": base_dir, "tmp": tmp_path}


def run(capsys, *argv) -> tuple[int, dict, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_score_loss_without_and_with_baseline(setup, capsys, runs_root):
    args = ["score-loss", "--run-dir", str(setup["new"]), "--catalog", str(setup["catalog"]),
            "--plan", str(setup["plan"])]
    code, out, err = run(capsys, *args)
    assert code == 0 and out["status"] == "scored" and out["findings"] == 0 and out["baseline"] is None
    suite = json.loads((setup["new"] / "suite.json").read_text())
    assert suite["run_id"] == "2026-12-02/090000" and suite["partitions"]
    assert "suite score" in err
    # again, now with a baseline: suite.json unchanged (write-once no-op), the comparison is written
    code, out, _ = run(capsys, *args, "--baseline", str(setup["base"]))
    assert code == 0 and out["findings"] == 2 and out["compared_cells"] == 3
    assert [f["category"] for f in out["top_findings"]] == ["output", "routing"]
    assert (setup["new"] / "TOP-REGRESSIONS.md").exists() and (setup["new"] / "comparison.json").exists()
    history = (runs_root / "LOSS-HISTORY.md").read_text()
    assert history.count("| 2026-12-02T09:00:00Z |") == 1   # scored twice, one row
    code, out, _ = run(capsys, *args, "--baseline", str(setup["base"] / "results.json"), "--fail-on-regression")
    assert code == 12 and out["findings"] == 2


def test_baseline_suite_json(setup, capsys):
    args = ["score-loss", "--catalog", str(setup["catalog"]),
            "--plan", str(setup["plan"])]
    assert run(capsys, *args, "--run-dir", str(setup["base"]))[0] == 0   # writes the baseline's suite.json (v1)
    code, out, _ = run(capsys, *args, "--run-dir", str(setup["new"]), "--baseline", str(setup["base"] / "suite.json"))
    assert code == 0 and out["baseline"]["results"].endswith("results.json")   # same version: its results.json
    v2 = setup["tmp"] / "loss-catalog.v2.json"
    v2.write_text(catalog_text(CATS, version="v2"))
    new2 = setup["new"].parent / "100000"
    write_results(new2, results(new_units(), run_id="2026-12-02/100000"))
    code, out, err = run(capsys, "score-loss", "--catalog", str(v2), "--plan", str(setup["plan"]),
                         "--run-dir", str(new2), "--baseline", str(setup["base"] / "suite.json"))
    assert code == 2 and out["error"] == "config_error"
    assert "catalog 'v1'" in out["message"] and "incommensurable" in out["message"]
    assert "results.json" in out["message"] and "frozen reference set" in out["message"]
    assert "Traceback" not in err


def test_results_of_another_schema_version(setup, capsys):
    path = setup["new"] / "results.json"
    data = json.loads(path.read_text())
    data["schema_version"] = 3
    path.write_text(json.dumps(data))
    code, out, _ = run(capsys, "score-loss", "--run-dir", str(setup["new"]), "--catalog", str(setup["catalog"]),
                       "--plan", str(setup["plan"]))
    assert code == 2 and "/schema_version" in out["message"] and "version 3 is not supported" in out["message"]
    data["schema_version"] = 2   # the streamed layout, but no rows file named
    path.write_text(json.dumps(data))
    code, out, _ = run(capsys, "score-loss", "--run-dir", str(setup["new"]), "--catalog", str(setup["catalog"]),
                       "--plan", str(setup["plan"]))
    assert code == 2 and "/units_file" in out["message"] and "results.units.jsonl" in out["message"]


def test_suite_json_is_write_once(setup, capsys):
    args = ["score-loss", "--run-dir", str(setup["new"]), "--plan", str(setup["plan"])]
    assert run(capsys, *args, "--catalog", str(setup["catalog"]))[0] == 0
    other = setup["tmp"] / "other.json"
    other.write_text(catalog_text([cat("routing", 1, ["routing.*"])]))
    code, out, _ = run(capsys, *args, "--catalog", str(other))
    assert code == 8 and out["error"] == "write_once_violation" and "suite.json is written once" in out["message"]


def test_bad_catalog_is_a_message(setup, capsys):
    bad = setup["tmp"] / "bad.json"
    bad.write_text(catalog_text([cat("a", 0.5, ["routing.*"]), cat("b", 0.31, ["hub.incomplete_answer"], "model_judged")]))
    code, out, _ = run(capsys, "score-loss", "--run-dir", str(setup["new"]), "--catalog", str(bad),
                       "--plan", str(setup["plan"]))
    assert code == 2 and str(bad) in out["message"] and "must not exceed 0.30" in out["message"]


def test_plan_loss(setup, capsys):
    out_md = setup["tmp"] / "E2E-PLAN.md"
    code, out, err = run(capsys, "plan-loss", "--output", str(out_md))
    assert code == 0 and out["sample_budget"] == 12 * len(out["partitions"]) and out["mde"] == 0.35
    assert out_md.read_text().startswith("# E2E plan")
    assert all(p["n_min"] == 12 and p["thin"] for p in out["partitions"])
    assert "sample budget" in err


def test_prune_korpus_dry_run(capsys, runs_root):
    code, out, _ = run(capsys, "prune-korpus", "--dry-run")
    assert code == 0 and out["status"] == "dry_run" and out["count"] == 0 and out["retention_days"] == 30


def test_unit_helper_builds_valid_results(setup):
    from obai_e2e.report.results import load_results
    assert load_results(setup["new"] / "results.json")["units"][0]["unit_id"] == "P0"
    assert unit("X").keys() >= {"unit_id", "rule_outcomes", "verdict", "labels", "provenance"}
