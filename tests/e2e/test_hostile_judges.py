"""Command judges that misbehave: every attack gets a bounded, honest outcome.

A judge is a real program run like a turn of the agent. One that prints far more than a
response may hold is refused as too large — its failed vote, kept so that a resumed run
does not ask it again — and never ends the run; one that leaves a ``setsid`` child
holding its output has its answer kept and the child ended; one that hangs is ended
with everything it started at its timeout; one that writes escape codes and NUL bytes
to stderr has them shown escaped, and only a bounded tail of them. The round is a copy
of a real demo run (tests/judging/data), so no agent is driven.
"""
from __future__ import annotations

import json
import os
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import yaml
from fake_provider import FakeProvider
from judging.helpers import copy_run, make_round
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.judge.models.ask import ask_round
from obai_e2e.judge.models.config import Judge, PanelConfig, Retry
from obai_e2e.judge.panel.responses import MAX_RAW_BYTES
from obai_e2e.report.results import load_results

from .hostile_helpers import hostile_target, marked, run_cli, wait_for

SCRIPTED = Path(__file__).resolve().parents[1] / "scripted_judge.py"


@pytest.fixture(scope="module")
def config_cases():
    config = load_target_config(None)
    return config, load_cases_for(config)


@pytest.fixture
def run(tmp_path, config_cases):
    run = copy_run(tmp_path)
    make_round(run, *config_cases)
    return run


def judge_program(tmp_path: Path, name: str, body: str) -> str:
    """A judge command: ``body`` runs after the bundle is read (``bundle``) and a valid answer made (``answer``)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(f"""\
        import os, subprocess, sys, time
        bundle = sys.stdin.read()
        with open({str(tmp_path / (name + '.runs'))!r}, "a") as fh:
            fh.write("run\\n")
        answer = subprocess.run([sys.executable, {str(SCRIPTED)!r}], input=bundle, capture_output=True,
                                text=True).stdout
    """) + textwrap.dedent(body))
    return f"{sys.executable} {path}"


def runs(tmp_path: Path, name: str) -> int:
    f = tmp_path / f"{name}.runs"
    return len(f.read_text().splitlines()) if f.exists() else 0


def panel(*commands: tuple[str, str, float]) -> PanelConfig:
    return PanelConfig(judges=tuple(Judge(name, "command", f"cmd-{name}", "command", command=cmd, timeout_s=t)
                                    for name, cmd, t in commands),
                       concurrency=3, retry=Retry(max_attempts=1), source="test")


def test_a_flooding_judge_a_lingering_child_and_a_noisy_stderr(run, tmp_path):
    mark = f"judge-child-{uuid.uuid4().hex[:8]}"
    flood = judge_program(tmp_path, "flood", f"""\
        sys.stdout.write("x" * {MAX_RAW_BYTES + 1_000_000})
    """)
    linger = judge_program(tmp_path, "linger", f"""\
        sys.stdout.write(answer)
        sys.stdout.flush()
        if os.fork() == 0:  # a grandchild in a session of its own, holding stdout, for an hour
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", {mark!r}])
    """)
    noisy = judge_program(tmp_path, "noisy", """\
        sys.stderr.write("\\x1b[31mboom\\x00\\x07" + "e" * 5000 + "\\x1b]0;title\\x07 END")
        sys.exit(3)
    """)
    said: list[str] = []
    t0 = time.monotonic()
    out = ask_round(run, "r1", panel(("flood", flood, 60), ("linger", linger, 60), ("noisy", noisy, 60)),
                    say=said.append)
    assert time.monotonic() - t0 < 45  # the lingering child did not hold the answer until the timeout
    judges = out["judges"]
    # The lingering judge's answer is kept, and its child is gone.
    assert judges["linger"]["status"] == "stored" and judges["linger"]["valid"] > 0
    assert wait_for(lambda: not marked(mark), 10), marked(mark)
    # The flood is that judge's failed vote, refused as too large, not the end of the run.
    [flood_missing] = judges["flood"]["batches_missing"]
    assert judges["flood"]["status"] == "no_answer" and "refused as too large" in flood_missing["error"]
    assert f"{MAX_RAW_BYTES + 1_000_000} bytes" in flood_missing["error"]
    # The noisy stderr is shown escaped and bounded.
    [noisy_missing] = judges["noisy"]["batches_missing"]
    error = noisy_missing["error"]
    assert "exited with 3" in error and "\\x1b]0;title\\x07 END" in error
    assert not any(c in error for c in "\x1b\x00\x07") and len(error) < 800
    shown = "\n".join(said)
    assert "\\x1b]0;title" in shown and not any(c in shown for c in "\x1b\x00\x07")
    # A resumed ask runs the flooding judge no more (its failure is kept) and asks the noisy one again.
    again = ask_round(run, "r1", panel(("flood", flood, 60), ("linger", linger, 60), ("noisy", noisy, 60)))
    assert (runs(tmp_path, "flood"), runs(tmp_path, "linger"), runs(tmp_path, "noisy")) == (1, 1, 2)
    assert again["judges"]["linger"]["status"] == "stored_before"
    assert "refused as too large" in again["judges"]["flood"]["batches_missing"][0]["error"]


def test_a_hanging_judge_is_ended_with_all_it_started_at_its_timeout(run, tmp_path):
    mark = f"judge-hang-{uuid.uuid4().hex[:8]}"
    hang = judge_program(tmp_path, "hang", f"""\
        if os.fork() == 0:
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", {mark!r}])
        time.sleep(3600)
    """)
    good = f"{sys.executable} {SCRIPTED}"
    t0 = time.monotonic()
    out = ask_round(run, "r1", panel(("hang", hang, 2), ("good1", good, 60), ("good2", good, 60)))
    assert time.monotonic() - t0 < 30
    assert "no answer within timeout_s = 2 s" in out["judges"]["hang"]["batches_missing"][0]["error"]
    assert wait_for(lambda: not marked(mark), 10), marked(mark)
    assert wait_for(lambda: not marked(str(tmp_path / "hang.py")), 10)


KEYS = {"E2E_ANTHROPIC_KEY": "sk-ant-e2e-61b0c4f2aa", "JUDGE_A2_CRED": "cred-a2-5e1f0c9b7d",
        "E2E_AZURE_KEY": "azure-e2e-93d2e7b5c1"}


def judges_file(tmp_path: Path, url: str) -> Path:
    data = {"version": 1, "retry": {"max_attempts": 1}, "judges": [
        {"name": "claude", "provider": "anthropic", "model": "claude-fake", "base_url": url,
         "api_key_env": "E2E_ANTHROPIC_KEY", "timeout_s": 30},
        {"name": "gpt", "provider": "openai", "model": "gpt-fake", "base_url": url + "/v1",
         "api_key_env": "JUDGE_A2_CRED", "timeout_s": 30},
        {"name": "llama", "provider": "openai", "model": "llama-fake", "base_url": url + "/openai/deployments/llama",
         "api_version": "2024-10-21", "auth": "api-key", "api_key_env": "E2E_AZURE_KEY", "timeout_s": 30}]}
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.slow
def test_no_judge_key_reaches_the_agent_and_a_panel_without_answers_is_on_record(harness_env, tmp_path):
    target, _ = hostile_target(tmp_path, "env", **{"target.env_passthrough": ["AGENT_*"]})
    with FakeProvider(keys={"a-key-nobody-sends"}) as fake:  # every judge is refused: HTTP 401
        env = {**os.environ, **KEYS, "OBAI_E2E_JUDGES": str(judges_file(tmp_path, fake.url)),
               "PLAIN_SETTING": "plain-7f3e", "SERVICE_TOKEN": "svc-token-0d9a4c", "AGENT_API_KEY": "agent-key-b81e"}
        code, out, err = run_cli("run", "--id", "MD1,MD2", "--target", str(target), "--judges", env=env)
        requests = list(fake.requests)
        assert fake.violations == []
    assert code == 3, err[-3000:]  # no unit failed, but the panel decided nothing: inconclusive
    run_dir = Path(out["results"]).parent

    # The agent printed its whole environment: no judge key, no secret it was not given.
    answer = json.loads((run_dir / "MD1.json").read_text(encoding="utf-8"))["answer"]
    assert "PLAIN_SETTING=plain-7f3e" in answer and "AGENT_API_KEY=" in answer  # declared: it passes
    for name in (*KEYS, "SERVICE_TOKEN"):
        assert f"\n{name}=" not in answer, name
    assert "OPIK_API_KEY=[REDACTED]" in answer  # the store's token it writes its traces with is not kept
    # No key in any file of the run directory (packets, the bundle, replies, asks.jsonl, reports) ...
    secrets = [*KEYS.values(), "svc-token-0d9a4c"]
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.name == "bundle.md" for p in files)
    for p in files:
        data = p.read_bytes()
        assert not any(s.encode() in data for s in secrets), f"{p} holds a secret"
    # ... nor in any request's body; each request carries only its own judge's key.
    own = {"claude-fake": KEYS["E2E_ANTHROPIC_KEY"], "gpt-fake": KEYS["JUDGE_A2_CRED"],
           "llama-fake": KEYS["E2E_AZURE_KEY"]}
    assert sorted(r.model for r in requests) == sorted(own)
    for r in requests:
        body = json.dumps(r.body)
        assert not any(s in body for s in secrets)
        headers = json.dumps(r.headers)
        assert own[r.model] in headers and not any(s in headers for s in secrets if s != own[r.model])

    # The panel that gave no answer is on record: results.json, the verdicts, report.md, report.html, exit 3.
    judges = load_results(run_dir / "results.json")["judges"]
    both = ["hub.incomplete_answer", "hub.unfaithful_answer"]
    assert (judges["answered"], judges["complete"], judges["left_undecided"]) == (0, False, both)
    assert {j["name"]: (j["outcome"], j["reason"].split(":")[0]) for j in judges["judges"]} == {
        "claude": ("failed", "HTTP 401 authentication_error"), "gpt": ("failed", "HTTP 401 invalid_request_error/"
                                                                                 "invalid_api_key"),
        "llama": ("failed", "HTTP 401 invalid_request_error/invalid_api_key")}
    assert judges["budget"]["spent_tokens"] == 0 and judges["budget"]["stopped"] is None
    for uid in ("MD1", "MD2"):
        verdict = json.loads((run_dir / f"{uid}.verdict.json").read_text(encoding="utf-8"))
        assert "hub.incomplete_answer stays undecided: no judge of the panel gave a vote (claude failed, gpt " \
               "failed, llama failed)." in verdict["judgment"]
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    head = report.split("| ID |")[0]
    assert "> **Warning:** Judge panel (round r1): 0 of 3 judges answered; decided for no unit: " \
           "hub.incomplete_answer, hub.unfaithful_answer — the run is inconclusive." in head
    assert "> - gpt (gpt-fake): failed — HTTP 401" in head
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert 'id="judges-warning"' in html and "0 of 3 judges answered" in html.split('<section class="summary"')[0]
    assert out["judges_left_undecided"] == both
