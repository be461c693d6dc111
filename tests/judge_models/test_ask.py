"""Asking a configured panel on a real round (the demo run's packets) against the loopback fake.

Each path ends in its documented outcome: answers stored through judge-response and
aggregated; a malformed answer is a parse failure (no vote, not asked again); a cited
span that does not exist refuses that packet; retries, timeouts and the budget leave a
judge without a vote and the question undecided; a resumed run pays for nothing twice;
no key reaches a file of the run directory.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal

import pytest
import yaml
from fake_provider import BAD_SPAN
from judging.helpers import run_units
from obai_e2e.base.errors import ConfigError, UsageError
from obai_e2e.base.procs import alive
from obai_e2e.cli import main
from obai_e2e.drive.packet_record import load_packet
from obai_e2e.judge.models import cache
from obai_e2e.judge.models.ask import ask_round
from obai_e2e.judge.models.outcomes import unit_panel
from obai_e2e.judge.models.runner import run_panel, summary_line
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.packets import generate
from obai_e2e.judge.panel.replay import replay
from obai_e2e.judge.panel.rounds import load_round
from obai_e2e.judge.rubric import check_packet
from obai_e2e.judge.verdict import mechanical_verdict

from .conftest import KEYS, panel, panel_data

# gpt-fake and llama-fake find MD1's answer (the latest AAPL price) incomplete; claude-fake does not.
TWO_TO_ONE = {"gpt-fake": {"latest price": "incomplete"}, "llama-fake": {"latest price": "incomplete"}}


def planned(run, config_cases) -> tuple:
    """(configuration, units of the run) as a headless run hands them to the panel."""
    config, cases = config_cases
    return config, run_units(run, cases)


def stored(rnd, judge: str) -> dict:
    return json.loads(rnd.response_path(judge).read_text())


def calls(rnd) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((rnd.dir / "calls").glob("*.json"))]


def test_three_judges_answer_and_the_majority_is_aggregated(fake, env, run, config_cases):
    fake.choices = TWO_TO_ONE
    cfg = panel(fake.url, prices={m: {"input_per_mtok": 3, "output_per_mtok": 15}
                                  for m in ("claude-fake", "gpt-fake", "llama-fake")})
    out = run_panel(run, *planned(run, config_cases), cfg, env=env)
    assert out["round"] == "r1" and out["generated"] and fake.count() == 3
    assert {r.wire for r in fake.requests} == {"anthropic", "openai"}
    rnd = load_round(run, "r1")
    for judge in ("claude", "gpt", "llama"):
        rec = stored(rnd, judge)
        reply = next(c for c in calls(rnd) if c["key"]["judge"] == judge)
        assert rec["raw"] == reply["raw"] and rec["model"] == reply["key"]["model"]
        assert {p["status"] for p in rec["validation"]["packets"].values()} == {"valid"}
        assert reply["key"]["bundle_sha256"] == rnd.manifest["bundle_sha256"]
        assert reply["key"]["prompt_sha256"] == rnd.manifest["prompt"]["sha256"]
    agg = json.loads(rnd.aggregate_path.read_text())
    q = agg["units"]["MD1"]["questions"]["hub.incomplete_answer"]
    assert q["votes"] == {"complete": 1, "incomplete": 2} and q["decided"] and q["trips"]
    assert agg["units"]["MD1"]["ratings"]["hub.incomplete_answer"] == [0, 1, 1]  # claude, gpt, llama
    # cost = Σ (input × 3 + output × 15) / 10^6 over the three replies, exactly
    want = sum(c["usage"]["input_tokens"] * 3 + c["usage"]["output_tokens"] * 15 for c in calls(rnd))
    assert Decimal(out["cost"]) == Decimal(want) / Decimal(1_000_000)
    assert out["tokens"]["total"] == sum(c["usage"]["input_tokens"] + c["usage"]["output_tokens"] for c in calls(rnd))
    line = summary_line(out)
    assert line.startswith(f"judges: 3 replies, {out['tokens']['total']:,} tokens, {out['cost']} USD, agreement")
    panel_rec = json.loads((rnd.dir / "panel.json").read_text())
    assert panel_rec["families"] == ["claude", "gpt", "llama"] and len(panel_rec["batches"]) == 1

    # Asked again (a resumed or re-rendered run): the same round, nothing sent.
    again = run_panel(run, *planned(run, config_cases), cfg, env=env)
    assert again["round"] == "r1" and not again["generated"] and again["asked"]["status"] == "aggregated_already"
    assert fake.count() == 3
    # The stored replies replay unchanged, offline.
    assert replay(run)["status"] == "ok"
    assert main(["replay-judges", "--run-dir", str(run)]) == 0


def test_malformed_bad_span_fenced_and_cut_answers(fake, env, rnd, run):
    fake.plan("claude-fake", "malformed")
    fake.plan("gpt-fake", "bad_span")
    fake.plan("llama-fake", "truncated")
    out = ask_round(run, "r1", panel(fake.url), env=env)
    assert fake.count() == 3  # an answer that is not valid is recorded, never asked again
    claude, gpt, llama = (stored(rnd, j) for j in ("claude", "gpt", "llama"))
    assert not claude["validation"]["parse"]["ok"] and "not valid JSON" in claude["validation"]["parse"]["error"]
    refused = {pid: r for pid, r in gpt["validation"]["packets"].items() if r["status"] == "refused"}
    assert len(refused) == 1
    (pid, rec), = refused.items()
    assert "/evidence/spans/0" in rec["pointer"] and BAD_SPAN in rec["message"]
    assert not llama["validation"]["parse"]["ok"]
    cut = next(c for c in calls(rnd) if c["key"]["judge"] == "llama")
    assert cut["response"]["truncated"] and cut["response"]["stop_reason"] == "length"
    assert out["judges"]["claude"]["parse_ok"] is False and out["judges"]["gpt"]["refused"] == 1


def test_a_fenced_answer_is_accepted(fake, env, rnd, run):
    fake.plan("claude-fake", "fenced")
    ask_round(run, "r1", panel(fake.url), env=env)
    rec = stored(rnd, "claude")
    assert rec["validation"]["parse"]["envelope"] == "fenced"
    assert {p["status"] for p in rec["validation"]["packets"].values()} == {"valid"}


def test_a_judge_that_keeps_failing_casts_no_vote(fake, env, run, config_cases):
    fake.choices = {"gpt-fake": {"latest price": "incomplete"}}
    fake.plan("llama-fake", "500", "500", "500")
    out = run_panel(run, *planned(run, config_cases), panel(fake.url), env=env)
    assert fake.count("llama-fake") == 3 and out["asked"]["judges"]["llama"]["status"] == "no_answer"
    rnd = load_round(run, "r1")
    assert not rnd.response_path("llama").exists()
    agg = json.loads(rnd.aggregate_path.read_text())
    assert agg["judges"] == ["claude", "gpt"] and agg["missing_judges"] == 1
    q = agg["units"]["MD1"]["questions"]["hub.incomplete_answer"]
    assert q["votes"] == {"complete": 1, "incomplete": 1} and not q["decided"] and q["majority"] == "abstain"
    line = json.loads((rnd.dir / "asks.jsonl").read_text().splitlines()[-1])
    llama = next(d for d in line["detail"] if d["judge"] == "llama")
    assert llama["status"] == "failed" and "gave up after 3 attempts" in llama["error"] and llama["attempts"] == 3


def worst_case(run, tokens_out: int = 16000) -> int:
    """The reservation of one request for the round r1 bundle: its bytes + the wire's 406 + 64 framing tokens
    + max_tokens."""
    return len((run / "judging" / "r1" / "bundle.md").read_bytes()) + 406 + 64 + tokens_out


def test_the_token_budget_stops_asking_and_leaves_units_undecided(fake, env, rnd, run, config_cases):
    fake.choices = {"claude-fake": {"": "incomplete"}}
    # The first request fits; after its real usage the next worst case does not.
    cfg = panel(fake.url, concurrency=1, budget={"max_tokens": worst_case(run) + 1000})
    asked = ask_round(run, "r1", cfg, env=env)
    assert fake.count() == 1
    assert asked["budget_stopped"].startswith("token budget:")
    assert [c["status"] for c in asked["detail"]] == ["answered", "budget_stopped", "budget_stopped"]
    aggregate_round(run, "r1", allow_missing=True)
    agg = json.loads(rnd.aggregate_path.read_text())
    questions = [q for u in agg["units"].values() for q in u["questions"].values() if q["applies"]]
    assert questions and all(not q["decided"] and q["majority"] == "abstain" and not q["trips"] for q in questions)
    # one judge's vote is no majority of three (its faithfulness choice: the first, faithful)
    assert all(q["votes"] == ({"incomplete": 1} if q["question"] == "q1" else {"faithful": 1}) for q in questions)
    # The verdict a headless run records says the question is open; it does not trip the code.
    config, cases = config_cases
    unit = next(u for u in run_units(run, cases) if u.id == "MD1")
    verdict = mechanical_verdict(check_packet(load_packet(run, "MD1"), unit.case, config), unit_panel(run, "MD1"))
    assert verdict["judged_by"] == "mechanical+panel" and "hub.incomplete_answer" not in verdict["reasons"]
    assert "hub.incomplete_answer stays undecided: no majority of the judge panel (incomplete 1; 2 of 3 judges " \
           "without a vote: gpt failed, llama failed)." in verdict["judgment"]
    assert sum(asked["tokens"].values()) <= worst_case(run) + 1000


def test_the_cost_budget_counts_what_earlier_asks_spent(fake, env, rnd, run):
    prices = {m: {"input_per_mtok": 3, "output_per_mtok": 15} for m in ("claude-fake", "gpt-fake", "llama-fake")}
    worst = Decimal(worst_case(run) - 16000) * 3 / 10**6 + Decimal(16000) * 15 / 10**6
    cfg = panel(fake.url, concurrency=1, budget={"max_cost": float(worst + Decimal("0.01"))}, prices=prices)
    first = ask_round(run, "r1", cfg, env=env)
    spent_tokens, spent_cost = cache.spent(run)
    assert fake.count() == 1
    assert first["budget_stopped"].startswith(f"cost budget: {spent_cost} USD spent and 0 reserved")
    assert str(spent_cost) == first["cost"] and spent_tokens == first["tokens"]["input"] + first["tokens"]["output"]
    again = ask_round(run, "r1", cfg, env=env)  # a resumed run: what the first ask paid still counts
    assert fake.count() == 1 and again["budget_stopped"].startswith(f"cost budget: {spent_cost} USD spent")
    wider = panel(fake.url, concurrency=1, budget={"max_cost": 5}, prices=prices)
    last = ask_round(run, "r1", wider, env=env)
    assert fake.count() == 3 and last["budget_stopped"] is None
    assert {j["status"] for j in last["judges"].values()} == {"stored_before", "stored"}


def test_batches_when_the_bundle_is_larger_than_the_batch_size(fake, env, rnd, run):
    fake.choices = TWO_TO_ONE
    fake.plan("gpt-fake", "good", "500", "500", "500")  # gpt's second batch never arrives
    cfg = panel(fake.url, batch={"max_packets": 2}, concurrency=2)
    ask_round(run, "r1", cfg, env=env)
    plan = json.loads((rnd.dir / "panel.json").read_text())["batches"]
    assert [len(b["packets"]) for b in plan] == [2, 2] and len(rnd.packets) == 4
    assert fake.count("claude-fake") == 2 and fake.count("llama-fake") == 2 and fake.count("gpt-fake") == 4
    claude = stored(rnd, "claude")
    assert {p["status"] for p in claude["validation"]["packets"].values()} == {"valid"}
    gpt = stored(rnd, "gpt")
    statuses = {pid: p["status"] for pid, p in gpt["validation"]["packets"].items()}
    assert sorted(statuses.values()) == ["absent", "absent", "valid", "valid"]
    assert {pid for pid, s in statuses.items() if s == "valid"} == set(plan[0]["packets"])
    # Each batch's text is the frozen prompt and that batch's packets only.
    claude_requests = [r.body for r in fake.requests if r.model == "claude-fake"]
    assert all(b["system"].startswith("# Instructions for a blind judge") for b in claude_requests)
    assert all(sum(pid in b["messages"][0]["content"] for pid in rnd.packets) == 2 for b in claude_requests)
    assert fake.violations == []
    assert replay(run, "r1")["status"] == "ok"


def test_a_run_killed_while_judges_answer_resumes_without_paying_twice(fake, env, rnd, run, tmp_path):
    fake.hang_s = 60
    fake.plan("llama-fake", "hang")
    judges_file = tmp_path / "judges.yaml"
    judges_file.write_text(yaml.safe_dump(panel_data(fake.url, per_judge={"llama": {"timeout_s": 120}})))
    code = ("import sys; from obai_e2e.judge.models.config import load; "
            "from obai_e2e.judge.models.ask import ask_round; ask_round(sys.argv[1], 'r1', load(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(run), str(judges_file)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list((rnd.dir / "calls").glob("*.json"))) < 2 or fake.count("llama-fake") < 1:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the two answering judges never stored their replies"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert fake.count() == 3
    out = ask_round(run, "r1", panel(fake.url), env=env)
    assert fake.count() == 4 and fake.count("llama-fake") == 2  # only the unanswered judge is asked again
    assert out["cache_hits"] == 2 and out["requests"] == 1
    assert all(rnd.response_path(j).exists() for j in ("claude", "gpt", "llama"))
    again = ask_round(run, "r1", panel(fake.url), env=env)
    assert fake.count() == 4 and again["requests"] == 0
    assert {j["status"] for j in again["judges"].values()} == {"stored_before"}


def test_replies_in_the_cache_are_not_paid_for_again(fake, env, rnd, run):
    """A kill after the replies were stored and before the responses were: nothing is sent again."""
    ask_round(run, "r1", panel(fake.url), env=env)
    assert fake.count() == 3
    raws = {j: stored(rnd, j)["raw"] for j in ("claude", "gpt", "llama")}
    for f in rnd.response_files():  # the state such a kill leaves behind
        f.unlink()
    out = ask_round(run, "r1", panel(fake.url), env=env)
    assert fake.count() == 3 and out["requests"] == 0 and out["cache_hits"] == 3
    assert {j: stored(rnd, j)["raw"] for j in raws} == raws


def test_the_concurrency_limit(fake, env, rnd, run):
    fake.hang_s = 1.0
    for m in ("claude-fake", "gpt-fake", "llama-fake"):
        fake.plan(m, "hang")
    ask_round(run, "r1", panel(fake.url, concurrency=2), env=env)
    assert fake.count() == 3 and fake.max_in_flight == 2


def test_no_key_value_reaches_any_file_of_the_run_directory(fake, env, run, config_cases):
    fake.plan("gpt-fake", "401")  # the error body echoes the key it got, as some providers do
    out = run_panel(run, *planned(run, config_cases), panel(fake.url), env=env)
    assert out["asked"]["judges"]["gpt"]["status"] == "no_answer"
    assert "Incorrect API key provided: [REDACTED]" in (load_round(run, "r1").dir / "asks.jsonl").read_text()
    files = [p for p in run.rglob("*") if p.is_file()]
    assert len(files) > 10
    for p in files:
        data = p.read_bytes()
        for value in KEYS.values():
            assert value.encode() not in data, f"{p} holds a key"


def test_a_missing_key_or_command_stops_before_anything_is_asked(fake, env, rnd, run):
    env = {k: v for k, v in env.items() if k != "FAKE_OPENAI_KEY"}
    with pytest.raises(ConfigError, match=r"judge 'gpt', field /judges/1/api_key_env: the environment variable "
                                          r"FAKE_OPENAI_KEY is not set"):
        ask_round(run, "r1", panel(fake.url), env=env)
    assert fake.count() == 0 and not (rnd.dir / "panel.json").exists()


def test_a_round_keeps_its_judges(fake, env, rnd, run):
    fake.plan("llama-fake", "500", "500", "500")
    ask_round(run, "r1", panel(fake.url), env=env)
    other = panel(fake.url, per_judge={"llama": {"model": "llama-other"}})
    with pytest.raises(UsageError, match="was asked of claude .*; the configuration now names .*llama-other"):
        ask_round(run, "r1", other, env=env)


def test_a_round_without_packets_asks_nobody(fake, env, run, config_cases, tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"version": "t", "categories": []}))
    config, cases = config_cases
    rejection = [u for u in run_units(run, cases) if u.id == "R1"]  # nothing needs a model's judgment
    generate(run, config, rejection, round_name="r1", catalog_path=catalog)
    out = ask_round(run, "r1", panel(fake.url), env=env)
    assert out["status"] == "nothing_to_judge" and fake.count() == 0
    assert json.loads((run / "judging" / "r1" / "panel.json").read_text())["batches"][0]["packets"] == []


def test_an_interrupted_ask_ends_its_judge_commands_at_once(run, rnd, tmp_path, env):
    pids = tmp_path / "pids"
    pids.mkdir()
    judge = tmp_path / "slow_judge.py"
    judge.write_text("import os, sys, time\n"
                     "open(os.path.join(sys.argv[1], os.environ['OBAI_JUDGE_LABEL']), 'w').write(str(os.getpid()))\n"
                     "time.sleep(120)\n")
    judges_file = tmp_path / "judges.yaml"
    judges_file.write_text(yaml.safe_dump({"version": 1, "judges": [
        {"name": f"J{i}", "provider": "command", "model": "slow", "command": f"{sys.executable} {judge} {pids}",
         "timeout_s": 300} for i in (1, 2, 3)]}))
    code = ("import sys; from obai_e2e.drive.sandbox import install_signal_teardown; install_signal_teardown(); "
            "from obai_e2e.judge.models.config import load; from obai_e2e.judge.models.ask import ask_round; "
            "ask_round(sys.argv[1], 'r1', load(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(run), str(judges_file)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(pids.iterdir())) < 3:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the judge commands never started"
        time.sleep(0.05)
    time.sleep(0.2)  # every pid file is written
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert time.monotonic() - started < 30  # not the judges' 120 s, nor their 300 s timeout
    for f in pids.iterdir():
        pid, gone = int(f.read_text()), time.monotonic() + 10
        while alive(pid) and time.monotonic() < gone:  # an orphan is reaped by init shortly after
            time.sleep(0.05)
        assert not alive(pid), f"judge {f.name} is still running"
    assert not rnd.response_files()  # nothing half-answered was stored


def test_timed_out_and_cut_off_attempts_are_charged_their_reservation(fake, env, rnd, run):
    fake.plan("gpt-fake", "cut")                 # the connection drops after the request: billable, retried
    fake.hang_s = 5
    fake.plan("llama-fake", "hang", "hang")      # two timeouts: both billable, no answer
    fake.plan("claude-fake", "500")              # answered by the server: costs nothing, retried
    prices = {m: {"input_per_mtok": 1, "output_per_mtok": 2} for m in ("claude-fake", "gpt-fake", "llama-fake")}
    cfg = panel(fake.url, prices=prices, per_judge={"llama": {"timeout_s": 0.3}},
                retry={"max_attempts": 2, "initial_backoff_s": 0.01, "jitter": False})
    out = ask_round(run, "r1", cfg, env=env)
    assert out["judges"]["gpt"]["status"] == "stored" and out["judges"]["claude"]["status"] == "stored"
    assert out["judges"]["llama"]["status"] == "no_answer"
    charges = cache.charges(run)
    assert sorted(c["judge"] for c in charges) == ["gpt", "llama", "llama"]
    bundle_bytes = len((rnd.dir / "bundle.md").read_bytes())
    for c in charges:  # the request's prompt tokens (bundle + framing + 64) and its max_tokens
        assert c["usage"] == {"input_tokens": bundle_bytes + 406 + 64, "output_tokens": 16000, "source": "reserved",
                              "cost": str((Decimal(bundle_bytes + 470) + 32000) / 1_000_000)}
    replies = [r["usage"] for r in calls(rnd)]
    tokens, cost = cache.spent(run)
    assert tokens == sum(u["input_tokens"] + u["output_tokens"] for u in replies) + 3 * (bundle_bytes + 470 + 16000)
    assert cost == sum(Decimal(u["cost"]) for u in replies) + sum(Decimal(c["usage"]["cost"]) for c in charges)
    assert out["tokens"]["input"] + out["tokens"]["output"] == tokens  # the ask's own figures include the charges
    assert fake.violations == []
