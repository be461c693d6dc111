"""obai-demo as real processes against the local trace store, read back through the SDK.

Every turn is a subprocess (``import opik`` makes each take seconds), so all turns run
concurrently in one module-scoped fixture and the tests then assert on the results. Live
here: clean turns, an async round trip, the hang and a store that is down; every other
fault is checked on its recorded turn (test_recorded_faults.py).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from obai_demo import __version__
from obai_demo.faults import FAULTS
from obai_demo.guardrail import REFUSAL
from obai_demo.specialists import text_of
from obai_e2e.base.opik_env import QUIET_SDK_ENV, local_store_env
from obai_e2e.trace.search import is_project_missing

from .faultchecks import Turn, assert_envelope, assert_grounded, job_id_of

pytestmark = pytest.mark.slow

PROJECT = f"obai-demo-test-{uuid.uuid4().hex[:8]}"
WORKERS = 4
TURN_TIMEOUT_S = 300  # a hang guard: a turn takes seconds, tens of seconds on a busy machine

MULTI = FAULTS["drop_skill"].example
TOP3 = "Which companies have the best margins? Give me the top 3 by net margin."
BACKTEST = FAULTS["zero_trades"].example
ASYNC = FAULTS["lost_job"].example
PREDICTION = FAULTS["no_slug"].example
NAKED_CALL = FAULTS["wrong_option_math"].example
CONDOR = "Iron condor 180/190/210/220 for a 3.20 credit: what are the breakevens and max loss?"
OFF_TOPIC = FAULTS["leaky_guardrail"].example
TESLA = FAULTS["extra_specialist"].example
FOLLOW_UP = "What are the results of job {job_id}?"

CLEAN = {"multi": MULTI, "top3": TOP3, "backtest": BACKTEST, "prediction": PREDICTION,
         "naked_call": NAKED_CALL, "condor": CONDOR, "refusal": OFF_TOPIC, "tesla": TESLA}


class Demo:
    """Runs ``obai-demo ask`` processes against one store and reads their traces back."""

    def __init__(self, api_url: str, root: Path, token: str | None = None) -> None:
        self.api_url = api_url
        self.token = token
        self.root = root
        self.exe = shutil.which("obai-demo")
        assert self.exe, "obai-demo is not installed in this environment"
        self._client = None

    def env(self, tag: str, home: Path, extra: dict[str, str]) -> dict[str, str]:
        return {**os.environ, **local_store_env(self.api_url, token=self.token), "OPIK_PROJECT_NAME": PROJECT,
                "OBAI_TRACE_TAG": tag, "OBAI_DEMO_HOME": str(home), **extra}

    def ask(self, query: str, session: str, home: Path, extra: dict[str, str] | None = None) -> Turn:
        tag = f"t-{uuid.uuid4().hex}"
        start = time.monotonic()
        proc = subprocess.run([self.exe, "ask", "--session", session, query], capture_output=True, text=True,
                              env=self.env(tag, home, extra or {}), timeout=TURN_TIMEOUT_S)
        return Turn(query, session, tag, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)

    @property
    def client(self):
        if self._client is None:
            for name, value in QUIET_SDK_ENV.items():
                os.environ.setdefault(name, value)
            import opik

            self._client = opik.Opik(host=self.api_url, workspace="default", api_key=self.token,
                                     project_name=PROJECT)
        return self._client

    def fetch(self, turn: Turn, expect: int = 1, wait_s: float = 10.0) -> Turn:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                found = self.client.search_traces(project_name=PROJECT, filter_string=f'tags contains "{turn.tag}"',
                                                  truncate=False)
            except Exception as exc:  # no turn of this module has written a trace yet
                if not is_project_missing(exc):
                    raise
                found = []
            if len(found) >= expect or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        turn.traces = []
        for trace in found:
            spans = self.client.search_spans(project_name=PROJECT, trace_id=trace.id, truncate=False)
            data = trace.model_dump()
            data["spans"] = sorted((s.model_dump() for s in spans), key=lambda s: (s["start_time"], s["id"]))
            turn.traces.append(data)
        return turn


def _scenario(demo: Demo, name: str) -> dict[str, Turn]:
    """The turns of one scenario: a clean query, the hang, or an async round trip."""
    slug = name.replace(":", "-")
    home = demo.root / slug
    session = f"s-{slug}"
    if name == "async":
        first = demo.ask(ASYNC, session, home, {"OBAI_DEMO_ETA_SECONDS": "0"})
        follow = demo.ask(FOLLOW_UP.format(job_id=job_id_of(first)), session, home)
        unknown = demo.ask(FOLLOW_UP.format(job_id="1000"), session, home)
        return {"first": first, "followup": follow, "unknown": unknown}
    if name == "fault:hang":
        return {"turn": _hang(demo, home)}
    return {"turn": demo.ask(CLEAN[name], session, home)}


def _process_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return None


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _hang(demo: Demo, home: Path) -> Turn:
    """Start a hanging turn in its own group; SIGTERM alone must leave the child alive."""
    tag = f"t-{uuid.uuid4().hex}"
    home.mkdir(parents=True, exist_ok=True)
    out, err = home / "stdout", home / "stderr"
    start = time.monotonic()
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen([demo.exe, "ask", "--session", "s-hang", MULTI], stdout=fo, stderr=fe,
                                env=demo.env(tag, home, {"OBAI_DEMO_FAULTS": "hang"}), start_new_session=True)
    facts: dict = {"child": None}
    try:
        deadline = time.monotonic() + TURN_TIMEOUT_S
        while facts["child"] is None and time.monotonic() < deadline and proc.poll() is None:
            if m := re.search(r"hang: child pid (\d+)", err.read_text()):
                facts["child"] = int(m.group(1))
            time.sleep(0.2)
        time.sleep(1.5)
        facts["still_running"] = proc.poll() is None
        _killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        facts["child_after_term"] = _process_state(facts["child"]) if facts["child"] else None
    finally:
        _killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    time.sleep(0.5)
    facts["child_after_kill"] = _process_state(facts["child"]) if facts["child"] else None
    return Turn(MULTI, "s-hang", tag, proc.returncode, out.read_text(), err.read_text(),
                time.monotonic() - start, facts=facts)


@pytest.fixture(scope="module")
def results(trace_store, tmp_path_factory) -> dict[str, dict[str, Turn]]:
    demo = Demo(trace_store.api_url, tmp_path_factory.mktemp("demo"), trace_store.token)
    names = ["async", "fault:hang", *CLEAN]  # the slow ones first so the pool drains evenly
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        done = dict(zip(names, pool.map(lambda n: _scenario(demo, n), names)))
    for name, turns in done.items():
        if name != "fault:hang":
            for turn in turns.values():
                demo.fetch(turn, wait_s=30)  # returns once the trace is there; the limit bounds a lost one
    return done


def clean(results, name: str) -> Turn:
    return results[name]["turn"]


# ---------------------------------------------------------------------- clean turns


def test_clean_turn_trace_shape(results):
    turn = clean(results, "multi")
    assert turn.exit_code == 0
    trace = turn.trace
    assert trace["name"] == "hub"
    assert trace["input"] == {"query": MULTI, "session": turn.session}
    assert trace["output"] == {"response": turn.answer, "exit_code": 0}
    assert trace["thread_id"] == turn.session
    assert sorted(trace["tags"]) == sorted(["obai-demo", turn.tag])
    # The providers of the trace's spans come first, as Opik returns a trace's metadata.
    assert trace["metadata"] == {"providers": ["obai-demo"], "e2e_tag": turn.tag, "session_id": turn.session,
                                 "demo_version": __version__, "channel": "cli", "faults": []}
    assert next(iter(trace["metadata"])) == "providers"
    assert trace["error_info"] is None
    assert turn.names == ["hub", "guardrail", "load_skill", "load_skill", "market_data_analysis",
                          "fundamentals_analysis", "compose_answer"]
    hub = turn.named("hub")[0]
    assert hub["parent_span_id"] is None
    assert all(s["parent_span_id"] == hub["id"] for s in turn.spans[1:])
    assert [s["type"] for s in turn.spans] == ["general", "guardrail", "general", "general", "tool", "tool", "llm"]
    guard = turn.named("guardrail")[0]
    assert guard["input"] == {"query": MULTI}
    assert guard["output"]["allowed"] is True and guard["output"]["category"] == "finance"
    assert [s["output"] for s in turn.named("load_skill")] == [
        {"loaded": "market-data", "tools": ["market_data_analysis"]},
        {"loaded": "fundamentals", "tools": ["fundamentals_analysis"]}]
    for span in turn.specialists:
        assert_envelope(span)
        assert span["input"]["request"]
    compose = turn.named("compose_answer")[0]
    assert compose["output"] == {"answer": turn.answer}
    assert compose["input"]["payloads"] == [text_of(s["output"]) for s in turn.specialists]
    assert_grounded(turn)


@pytest.mark.parametrize("name, specialist, must_contain", [
    ("top3", "fundamentals_analysis", ["Top 3 by net margin: NVDA (Nvidia) 55.86%"]),
    ("backtest", "strategy_analysis", ["Operators: BUY if RSI(14) < 30; SELL if RSI(14) > 70; STOP 1.5%",
                                       "Total trades: ", "Win rate: ", "Total return: ", "Verdict: "]),
    ("prediction", "prediction_market_analysis", ["fed-cuts-rates-december-2026"]),
    ("naked_call", "options_analysis", ["max loss unlimited", "breakeven 204.50"]),
    ("condor", "options_analysis", ["max loss $680.00 (capped)", "breakevens 186.80 and 213.20"]),
    ("tesla", "market_data_analysis", ["TSLA (Tesla) last closed at "]),
])
def test_clean_specialist_turns(results, name, specialist, must_contain):
    turn = clean(results, name)
    assert turn.exit_code == 0 and turn.specialist_names == [specialist]
    assert_envelope(turn.specialists[0])
    for text in must_contain:
        assert text in turn.answer
    assert_grounded(turn)


def test_strategy_input_is_the_spec(results):
    turn = clean(results, "backtest")
    assert turn.named("strategy_analysis")[0]["input"] == {
        "spec": "Backtest AAPL on daily closes: BUY when RSI(14) < 30; SELL when RSI(14) > 70; "
                "stop loss 1.5%; entry time 9:45"}


def test_refusal(results):
    turn = clean(results, "refusal")
    assert (turn.exit_code, turn.answer) == (1, REFUSAL)
    assert turn.names == ["hub", "guardrail"]
    assert turn.named("guardrail")[0]["output"]["allowed"] is False
    assert turn.trace["output"] == {"response": REFUSAL, "exit_code": 1}


def test_async_job_and_follow_up(results):
    turns = results["async"]
    first, follow = turns["first"], turns["followup"]
    assert first.exit_code == 0 and re.search(r"Job ID: \d{4}\. ETA: 0 seconds\.", first.answer)
    stub = first.named("strategy_analysis")[0]
    assert stub["output"]["structuredContent"] == {"job_id": job_id_of(first.answer), "status": "queued",
                                                   "eta_seconds": 0}
    assert follow.exit_code == 0 and follow.trace["thread_id"] == first.trace["thread_id"]
    assert follow.trace["id"] != first.trace["id"]
    assert follow.skills == ["strategy-backtest"]
    span = follow.named("strategy_analysis")[0]
    assert span["input"] == {"job_id": job_id_of(first.answer), "spec": stub["input"]["spec"]}
    for line in ("Operators: ", "Total trades: ", "Verdict: "):
        assert line in text_of(span["output"]) and line in follow.answer
    assert_grounded(follow)
    unknown = turns["unknown"]
    assert (unknown.exit_code, unknown.stdout) == (4, "") and "unknown job 1000" in unknown.stderr
    assert unknown.trace["output"] == {"response": "", "exit_code": 4}
    assert unknown.specialists == []


# ---------------------------------------------------------------------- the hang fault
# The other faults are checked on recorded turns (test_recorded_faults.py); a hang is about
# the live process group.


def check_hang(bad):
    info = bad.facts
    assert info["child"] and info["still_running"], bad.stderr
    assert bad.exit_code == -signal.SIGTERM and bad.stdout == ""
    assert info["child_after_term"] not in (None, "Z")  # SIGTERM is ignored by the child
    assert info["child_after_kill"] in (None, "Z")  # SIGKILL to the group ends it


def test_hang_fault(results):
    check_hang(results["fault:hang"]["turn"])


# ---------------------------------------------------------------------- store down


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_store_down_still_answers_within_bounded_extra_time(trace_store, tmp_path):
    # Last in the module: the pool above has finished, so these turns have the machine.
    demo = Demo(trace_store.api_url, tmp_path, trace_store.token)
    refused = Demo(f"http://127.0.0.1:{_closed_port()}/api", tmp_path)
    # A backend that accepts connections and never answers: the kernel completes the
    # handshake from the listen backlog, the request then waits for a reply.
    with socket.socket() as silent_sock:
        silent_sock.bind(("127.0.0.1", 0))
        silent_sock.listen(64)
        silent = Demo(f"http://127.0.0.1:{silent_sock.getsockname()[1]}/api", tmp_path)
        # Side by side: all three pay the same CPU for starting up; the differences are
        # the time the SDK spends at exit on a backend that is not there.
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = [pool.submit(d.ask, MULTI, f"s-{name}", tmp_path / name)
                       for name, d in (("up", demo), ("refused", refused), ("silent", silent))]
            up, down, hung = (f.result() for f in futures)
    assert up.exit_code == 0 and up.answer.startswith("AAPL (Apple) last closed at ")
    for turn in (down, hung):
        assert turn.exit_code == 0 and turn.answer == up.answer
    # A silent backend holds the SDK's requests past the flush budget, so the demo leaves
    # without its trace and says so. Against a refused port the SDK may give its batch up
    # at once and report the flush done: either way the answer came and the exit was bounded.
    assert "did not take the trace in time" in hung.stderr
    assert "did not take the trace in time" not in up.stderr
    print(f"\nstore up {up.elapsed:.2f} s, refused {down.elapsed:.2f} s "
          f"(+{down.elapsed - up.elapsed:.2f}), silent {hung.elapsed:.2f} s (+{hung.elapsed - up.elapsed:.2f})")
    # The demo bounds its flush at 2 s; without a bound the SDK waits for ever. 20 s tells the
    # two apart even when the three turns compete with a busy machine for the CPU.
    assert down.elapsed - up.elapsed < 20
    assert hung.elapsed - up.elapsed < 20
