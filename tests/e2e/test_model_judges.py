"""Configured model judges end to end on the demo, against the loopback fake provider.

Three judges of different families (an Anthropic Messages model, an OpenAI Chat
Completions model, an Azure-style deployment) disagree 2:1 on the top-3 answer: the
majority trips hub.incomplete_answer, which shows in the verdict, its report.md row,
results.json, report.html and, as rater variance, in suite.json — as the scripted
--panel-command path shows it. A resumed run sends no request again; a budget that
admits one request leaves the questions undecided, not passed; no key reaches the run
directory.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from fake_provider import FakeProvider
from obai_e2e.report.report_md import read_rows
from obai_e2e.report.results import load_results

from .conftest import REPO, obai_here

pytestmark = pytest.mark.slow

KEYS = {"E2E_ANTHROPIC_KEY": "sk-ant-e2e-7c41d09b2f", "E2E_OPENAI_KEY": "sk-oai-e2e-1a5f93e6c8",
        "E2E_AZURE_KEY": "azure-e2e-0b7d2c91fe"}
MODELS = ("claude-fake", "gpt-fake", "llama-fake")
TWO_TO_ONE = {"gpt-fake": {"top 3 by net margin": "incomplete"}, "llama-fake": {"top 3 by net margin": "incomplete"}}


def judges_file(tmp_path: Path, url: str, **top) -> Path:
    data = {"version": 1, "judges": [
        {"name": "claude", "provider": "anthropic", "model": "claude-fake", "base_url": url,
         "api_key_env": "E2E_ANTHROPIC_KEY", "timeout_s": 30},
        {"name": "gpt", "provider": "openai", "model": "gpt-fake", "base_url": url + "/v1",
         "api_key_env": "E2E_OPENAI_KEY", "timeout_s": 30},
        {"name": "llama", "provider": "openai", "model": "llama-fake", "base_url": url + "/openai/deployments/llama",
         "api_version": "2024-10-21", "auth": "api-key", "api_key_env": "E2E_AZURE_KEY", "timeout_s": 30}],
        "prices": {m: {"input_per_mtok": 3, "output_per_mtok": 15} for m in MODELS}, **top}
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def obai(*args: str, env: dict) -> subprocess.CompletedProcess:
    return obai_here(list(args), REPO, env)


def test_model_judges_majority_reaches_everything_and_a_resume_pays_nothing(harness_env, tmp_path):
    with FakeProvider(choices=TWO_TO_ONE) as fake:
        env = {**os.environ, **KEYS, "OBAI_E2E_JUDGES": str(judges_file(tmp_path, fake.url))}
        env.pop("OBAI_DEMO_FAULTS", None)
        done = obai("run", "--id", "MD1,F2,O2", "--jobs", "2", "--judges", env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads(done.stdout)
        run_dir = Path(out["run_dir"])
        assert fake.count() == 3 and {r.wire for r in fake.requests} == {"anthropic", "openai"}
        assert fake.violations == []  # every request as both providers' references define it

        verdict = json.loads((run_dir / "F2.verdict.json").read_text())
        assert verdict["verdict"] == "needs_review" and verdict["reasons"] == ["hub.incomplete_answer"]
        assert verdict["judged_by"] == "mechanical+panel"
        q = verdict["judge_panel"]["questions"]["hub.incomplete_answer"]
        assert q["trips"] and q["votes"] == {"complete": 1, "incomplete": 2}
        assert q["choices"] == {"claude": "complete", "gpt": "incomplete", "llama": "incomplete"}
        assert json.loads((run_dir / "MD1.verdict.json").read_text())["verdict"] == "pass"

        rows = {r["ID"]: r for r in read_rows(run_dir / "report.md")}
        assert rows["F2"]["Verdict"] == "needs_review" and rows["F2"]["Reason"] == "hub.incomplete_answer"
        assert "judge panel found the answer incomplete" in (run_dir / "report.md").read_text()

        results = load_results(run_dir / "results.json")
        unit = next(u for u in results["units"] if u["unit_id"] == "F2")
        assert unit["judge_panel"]["ratings"]["hub.incomplete_answer"] == [0, 1, 1]  # claude, gpt, llama
        assert unit["judge_panel"]["majority"]["hub.incomplete_answer"] == "incomplete"
        assert unit["judge_panel"]["models"] == dict(zip(("claude", "gpt", "llama"), MODELS))
        judges = results["judges"]
        assert judges["configured"] and judges["families"] == ["claude", "gpt", "llama"]
        assert [(j["name"], j["model"], j["provider"]) for j in judges["judges"]] == \
            [("claude", "claude-fake", "anthropic"), ("gpt", "gpt-fake", "openai"), ("llama", "llama-fake", "openai")]
        assert judges["replies"] == 3 and judges["tokens"]["total"] > 0 and judges["cost"] and judges["currency"] == "USD"
        assert out["judges"]["requests"] == 3 and out["judges"]["cost"] == judges["cost"]
        kappa = judges["agreement"]["fleiss_kappa"]
        line = f"judges: 3 replies, {judges['tokens']['total']:,} tokens, {judges['cost']} USD, agreement"
        assert line in done.stderr and f"κ {kappa:.2f}" in done.stderr

        html = (run_dir / "report.html").read_text()
        data = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S)
        assert data, "the report embeds its unit data"
        f2 = next(u for u in json.loads(data.group(1))["units"] if u["id"] == "F2")
        panel = dict(f2["panel"])
        assert "claude (claude-fake), gpt (gpt-fake), llama (llama-fake)" in panel["panel"]
        assert "majority: incomplete" in panel["hub.incomplete_answer"] and "claude → complete" in panel["hub.incomplete_answer"]
        assert 'id="judges"' in html and "gpt (gpt-fake, gpt)" in html

        suite = json.loads((run_dir / "suite.json").read_text())
        part = next(p for p in suite["partitions"] if p["labels"].get("intent") == "fundamentals")
        # sigma_r^2 over the run's three double-rated units: variances 0, 1/3 and 0 -> 1/9.
        assert part["by_category"]["answer_completeness"]["rater_variance"] == pytest.approx(1 / 9)

        again = obai("run", "--resume", str(run_dir), "--judges", env=env)
        assert again.returncode == 0, again.stderr[-3000:]
        assert fake.count() == 3  # every reply is stored: nothing is asked again
        assert "0 requests sent now" in again.stderr
        assert obai("replay-judges", "--run-dir", str(run_dir), env=env).returncode == 0

    for p in run_dir.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert not any(k.encode() in data for k in KEYS.values()), f"{p} holds a key"


def test_the_budget_stop_leaves_questions_undecided_not_passed(harness_env, tmp_path):
    with FakeProvider(choices={"claude-fake": {"": "incomplete"}}) as fake:
        # Output tokens cost 0.001 each, input nothing: a request's worst case is its 16 000 output
        # tokens, 16.0. The first fits in 16.05; after its real output (over 50 tokens) the next does not.
        prices = {m: {"input_per_mtok": 0, "output_per_mtok": 1000} for m in MODELS}
        path = judges_file(tmp_path, fake.url, concurrency=1, budget={"max_cost": 16.05})
        data = yaml.safe_load(path.read_text())
        data["prices"] = prices
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        env = {**os.environ, **KEYS}
        env.pop("OBAI_DEMO_FAULTS", None)
        done = obai("run", "--id", "MD1,F2", "--judges-file", str(path), env=env)
        # No unit failed, but hub.incomplete_answer was decided for none of them: inconclusive.
        assert done.returncode == 3, done.stderr[-3000:]
        assert fake.count() == 1 and fake.violations == []
        run_dir = Path(json.loads(done.stdout)["run_dir"])
        assert "budget reached (cost budget): unasked questions stay undecided" in done.stderr
        results = load_results(run_dir / "results.json")
        budget = results["judges"]["budget"]
        assert budget["max_cost"] == "16.05" and budget["stopped"].startswith("cost budget: ")
        assert budget["spent_cost"] == results["judges"]["cost"] and budget["spent_tokens"] > 0
        head = (run_dir / "report.md").read_text().split("| ID |")[0]
        assert f"Budget: {budget['spent_tokens']:,} tokens, {budget['spent_cost']} USD of 16.05 USD spent; " \
               f"stopped: {budget['stopped']}" in head
        assert "stopped: cost budget" in (run_dir / "report.html").read_text().split('<section class="summary"')[0]
        for uid in ("MD1", "F2"):
            unit = next(u for u in results["units"] if u["unit_id"] == uid)
            q = unit["judge_panel"]["questions"]["hub.incomplete_answer"]
            assert q["votes"] == {"incomplete": 1} and not q["decided"] and q["majority"] == "abstain"
            assert not q["trips"] and q["majority_loss"] is None
            assert "hub.incomplete_answer stays undecided: no majority of the judge panel (incomplete 1; 2 of 3 " \
                   "judges without a vote: gpt failed, llama failed)" in unit["judgment"]
        assert [j["answered"] for j in results["judges"]["judges"]] == [True, False, False]
