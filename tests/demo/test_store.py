"""obai-demo as real processes against the local trace store, read back through the SDK.

Every turn is a subprocess (``import opik`` makes each take seconds), so all turns run
concurrently in one module-scoped fixture and the tests then assert on the results.
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
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from obai_demo import __version__, grounding
from obai_demo.faults import FAULTS
from obai_demo.guardrail import REFUSAL
from obai_demo.specialists import text_of
from obai_e2e.base.opik_env import QUIET_SDK_ENV, local_store_env

pytestmark = pytest.mark.slow

PROJECT = f"obai-demo-test-{uuid.uuid4().hex[:8]}"
WORKERS = 4
TURN_TIMEOUT_S = 300  # a hang guard: a turn takes seconds, tens of seconds on a busy machine
SPECIALISTS = ("market_data_analysis", "fundamentals_analysis", "strategy_analysis",
               "prediction_market_analysis", "options_analysis")

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


@dataclass
class Turn:
    """One finished process and the traces its tag found."""

    query: str
    session: str
    tag: str
    exit_code: int | None
    stdout: str
    stderr: str
    elapsed: float
    traces: list[dict] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    """What a test observed besides the process result (the hang fault's child)."""

    @property
    def trace(self) -> dict:
        assert len(self.traces) == 1, f"{len(self.traces)} traces for {self.tag}"
        return self.traces[0]

    @property
    def spans(self) -> list[dict]:
        return self.trace["spans"]

    @property
    def names(self) -> list[str]:
        return [s["name"] for s in self.spans]

    def named(self, name: str) -> list[dict]:
        return [s for s in self.spans if s["name"] == name]

    @property
    def skills(self) -> list[str]:
        return [s["input"]["skill"] for s in self.named("load_skill")]

    @property
    def specialists(self) -> list[dict]:
        return [s for s in self.spans if s["name"] in SPECIALISTS]

    @property
    def specialist_names(self) -> list[str]:
        return [s["name"] for s in self.specialists]

    @property
    def answer(self) -> str:
        return self.stdout[:-1] if self.stdout.endswith("\n") else self.stdout

    def payload(self, name: str) -> str:
        (span,) = self.named(name)
        return text_of(span["output"])


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
            found = self.client.search_traces(project_name=PROJECT, filter_string=f'tags contains "{turn.tag}"',
                                              truncate=False)
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


def _job_id(turn: Turn | str) -> str:
    answer = turn if isinstance(turn, str) else turn.stdout
    m = re.search(r"Job ID: (\d{4})", answer)
    assert m, answer if isinstance(turn, str) else f"exit {turn.exit_code}: {turn.stdout!r} {turn.stderr}"
    return m.group(1)


def _scenario(demo: Demo, name: str) -> dict[str, Turn]:
    """The turns of one scenario: a clean query, a fault, or an async round trip."""
    slug = name.replace(":", "-")
    home = demo.root / slug
    session = f"s-{slug}"
    if name == "async":
        first = demo.ask(ASYNC, session, home, {"OBAI_DEMO_ETA_SECONDS": "0"})
        follow = demo.ask(FOLLOW_UP.format(job_id=_job_id(first)), session, home)
        unknown = demo.ask(FOLLOW_UP.format(job_id="1000"), session, home)
        return {"first": first, "followup": follow, "unknown": unknown}
    if name in CLEAN:
        return {"turn": demo.ask(CLEAN[name], session, home)}
    fault = name.removeprefix("fault:")
    if fault == "hang":
        return {"turn": _hang(demo, home)}
    extra = {"OBAI_DEMO_FAULTS": fault, "OBAI_DEMO_ETA_SECONDS": "0"}
    turns = {"turn": demo.ask(FAULTS[fault].example, session, home, extra)}
    if fault == "lost_job":
        job = _job_id(turns["turn"])
        turns["followup"] = demo.ask(FOLLOW_UP.format(job_id=job), session, home, extra)
    return turns


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
    names = ["async", *CLEAN, *(f"fault:{f}" for f in FAULTS)]
    # The slow ones first so the pool drains evenly.
    names.sort(key=lambda n: n not in ("async", "fault:hang", "fault:lost_job", "fault:duplicate_trace"))
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        done = dict(zip(names, pool.map(lambda n: _scenario(demo, n), names)))
    for name, turns in done.items():
        for key, turn in turns.items():
            if name == "fault:hang":
                continue
            expect = 2 if name == "fault:duplicate_trace" else 0 if name == "fault:no_trace" else 1
            demo.fetch(turn, expect=expect, wait_s=30 if expect else 3)
    return done


def clean(results, name: str) -> Turn:
    return results[name]["turn"]


def faulty(results, fault: str, key: str = "turn") -> Turn:
    return results[f"fault:{fault}"][key]


def _assert_envelope(span: dict) -> None:
    out = span["output"]
    assert span["type"] == "tool"
    assert set(out) == {"content", "structuredContent", "isError"} and out["isError"] is False
    assert out["content"][0]["type"] == "text" and out["content"][0]["text"]


def _assert_grounded(turn: Turn) -> None:
    payloads = [text_of(s["output"]) for s in turn.specialists if s["output"]]
    assert grounding.ungrounded(turn.answer, payloads) == []


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
    assert trace["metadata"] == {"e2e_tag": turn.tag, "session_id": turn.session,
                                 "demo_version": __version__, "faults": []}
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
        _assert_envelope(span)
        assert span["input"]["request"]
    compose = turn.named("compose_answer")[0]
    assert compose["output"] == {"answer": turn.answer}
    assert compose["input"]["payloads"] == [text_of(s["output"]) for s in turn.specialists]
    _assert_grounded(turn)


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
    _assert_envelope(turn.specialists[0])
    for text in must_contain:
        assert text in turn.answer
    _assert_grounded(turn)


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
    assert stub["output"]["structuredContent"] == {"job_id": _job_id(first.answer), "status": "queued",
                                                   "eta_seconds": 0}
    assert follow.exit_code == 0 and follow.trace["thread_id"] == first.trace["thread_id"]
    assert follow.trace["id"] != first.trace["id"]
    assert follow.skills == ["strategy-backtest"]
    span = follow.named("strategy_analysis")[0]
    assert span["input"] == {"job_id": _job_id(first.answer), "spec": stub["input"]["spec"]}
    for line in ("Operators: ", "Total trades: ", "Verdict: "):
        assert line in text_of(span["output"]) and line in follow.answer
    _assert_grounded(follow)
    unknown = turns["unknown"]
    assert (unknown.exit_code, unknown.stdout) == (4, "") and "unknown job 1000" in unknown.stderr
    assert unknown.trace["output"] == {"response": "", "exit_code": 4}
    assert unknown.specialists == []


# ---------------------------------------------------------------------- faults


def _baseline(results, fault: str) -> Turn:
    query = FAULTS[fault].example
    for name, q in CLEAN.items():
        if q == query:
            return clean(results, name)
    if query == ASYNC:
        return results["async"]["first"]
    raise AssertionError(f"no clean baseline for {fault}")


def _same_answer(bad: Turn, base: Turn) -> None:
    assert bad.answer == base.answer


def _first_specialist(turn: Turn) -> dict:
    return turn.specialists[0]


def check_drop_skill(bad, base):
    assert bad.skills == base.skills[1:] and bad.specialist_names == base.specialist_names
    _same_answer(bad, base)


def check_extra_skill(bad, base):
    assert bad.skills == base.skills + ["options"] and bad.specialist_names == base.specialist_names
    _same_answer(bad, base)


def check_skip_specialist(bad, base):
    assert bad.specialist_names == base.specialist_names[:-1] and bad.skills == base.skills
    assert bad.answer == base.answer.split("\n\n")[0]
    _assert_grounded(bad)


def check_reorder_specialists(bad, base):
    assert bad.specialist_names == base.specialist_names[::-1]
    _same_answer(bad, base)


def check_extra_specialist(bad, base):
    assert bad.specialist_names == base.specialist_names + ["fundamentals_analysis"]
    assert bad.skills == base.skills
    _same_answer(bad, base)


def check_paraphrase_threshold(bad, base):
    spec = bad.named("strategy_analysis")[0]["input"]["spec"]
    assert "RSI(14)" not in spec and "< 30.0" in spec and "> 70.0" in spec and "RSI 14" in spec
    assert "1.5%" in spec and "9:45" in spec
    assert bad.payload("strategy_analysis") == base.payload("strategy_analysis")
    _same_answer(bad, base)


def check_span_error(bad, base):
    span = _first_specialist(bad)
    assert span["name"] == base.specialist_names[0]
    assert span["error_info"] and span["output"] is None
    assert [s["name"] for s in bad.spans if s["error_info"]] == [span["name"]]
    assert bad.trace["error_info"] is None and bad.exit_code == 0
    assert bad.specialist_names == base.specialist_names
    _assert_grounded(bad)


def check_empty_payload(bad, base):
    assert _first_specialist(bad)["output"] == {"content": [], "isError": False}
    assert bad.specialists[1]["output"] == base.specialists[1]["output"]
    _assert_grounded(bad)


def check_tool_error(bad, base):
    assert _first_specialist(bad)["output"] == {"isError": True,
                                                "content": [{"type": "text", "text": "upstream timeout"}]}
    assert "upstream timeout" in bad.answer
    _assert_grounded(bad)


def check_broken_contract(bad, base):
    text = bad.payload("strategy_analysis")
    assert "Total trades" not in text and "Verdict: " in text and "Operators: " in text
    assert not re.search(r"(?m)^Total trades", bad.answer)


def check_zero_trades(bad, base):
    text = bad.payload("strategy_analysis")
    assert "Total trades: 0" in text and "Verdict: NO TRADES" in text
    assert bad.named("strategy_analysis")[0]["input"] == base.named("strategy_analysis")[0]["input"]
    _assert_grounded(bad)


def check_no_job_id(bad, base):
    assert "Job ID:" not in bad.answer and re.search(r"ETA: \d+ seconds", bad.answer)
    assert "check back soon" in bad.answer.lower()
    assert bad.named("strategy_analysis")[0]["output"]["structuredContent"]["status"] == "queued"


def check_lost_job(bad, base, results):
    assert re.search(r"Job ID: \d{4}", bad.answer)
    follow = faulty(results, "lost_job", "followup")
    assert (follow.exit_code, follow.stdout) == (4, "") and follow.specialists == []


def check_no_slug(bad, base):
    market = _first_specialist(bad)["output"]["structuredContent"]["markets"][0]
    assert market["slug"] in text_of(_first_specialist(bad)["output"])
    assert market["slug"] not in bad.answer and market["condition_id"] not in bad.answer
    assert market["slug"] in base.answer
    _assert_grounded(bad)


def check_wrong_option_math(bad, base):
    text = bad.payload("options_analysis")
    assert "Max loss: unlimited" in base.payload("options_analysis") and "unlimited" not in text
    assert re.search(r"Max loss: \$[\d,]+\.\d\d", text)


def check_empty_answer(bad, base):
    assert (bad.exit_code, bad.stdout) == (0, "")
    assert bad.trace["output"] == {"response": "", "exit_code": 0}
    assert bad.names == base.names


def check_ungrounded_number(bad, base):
    assert "987.65" in bad.answer and bad.answer.startswith(base.answer)
    payloads = [text_of(s["output"]) for s in bad.specialists]
    assert grounding.ungrounded(bad.answer, payloads) == ["987.65"]


def check_leaky_guardrail(bad, base):
    assert (bad.exit_code, bad.answer) == (1, REFUSAL)
    assert bad.named("guardrail")[0]["output"]["allowed"] is False
    assert bad.specialist_names == ["market_data_analysis"] and bad.skills == []


def check_leaky_response(bad, base):
    assert bad.exit_code == 1 and bad.answer.startswith(REFUSAL) and re.search(r"AAPL closed at [\d.]+", bad.answer)
    assert bad.specialists == []


def check_wrong_exit_code(bad, base):
    assert (bad.exit_code, bad.answer) == (0, REFUSAL)
    assert bad.trace["output"] == {"response": REFUSAL, "exit_code": 0}


def check_hang(bad, base):
    info = bad.facts
    assert info["child"] and info["still_running"], bad.stderr
    assert bad.exit_code == -signal.SIGTERM and bad.stdout == ""
    assert info["child_after_term"] not in (None, "Z")  # SIGTERM is ignored by the child
    assert info["child_after_kill"] in (None, "Z")  # SIGKILL to the group ends it


def check_no_trace(bad, base):
    assert bad.exit_code == 0 and bad.traces == []
    _same_answer(bad, base)


def check_duplicate_trace(bad, base):
    assert len(bad.traces) == 2 and bad.traces[0]["id"] != bad.traces[1]["id"]
    for trace in bad.traces:
        assert [s["name"] for s in trace["spans"]] == base.names
        assert trace["output"] == {"response": base.answer, "exit_code": 0}
    assert bad.stdout == base.stdout


def check_crash(bad, base):
    assert (bad.exit_code, bad.stdout) == (70, "")
    assert "Traceback" in bad.stderr and "InjectedCrash" in bad.stderr
    assert bad.trace["error_info"]["exception_type"] == "InjectedCrash"
    assert bad.trace["output"] == {"response": "", "exit_code": 70}
    assert bad.names == ["hub", "guardrail"]
    assert [s["name"] for s in bad.spans if s["error_info"]] == ["hub"]


CHECKS = {name: globals()[f"check_{name}"] for name in FAULTS}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault(results, fault):
    bad = faulty(results, fault)
    base = _baseline(results, fault)
    if fault not in ("hang", "no_trace"):
        for trace in bad.traces:
            assert trace["metadata"]["faults"] == [fault]
            assert trace["output"] is not None
    check = CHECKS[fault]
    if fault == "lost_job":
        check(bad, base, results)
    else:
        check(bad, base)


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
        assert "did not take the trace in time" in turn.stderr
    assert "did not take the trace in time" not in up.stderr
    print(f"\nstore up {up.elapsed:.2f} s, refused {down.elapsed:.2f} s "
          f"(+{down.elapsed - up.elapsed:.2f}), silent {hung.elapsed:.2f} s (+{hung.elapsed - up.elapsed:.2f})")
    # The demo bounds its flush at 2 s; without a bound the SDK waits for ever. 20 s tells the
    # two apart even when the three turns compete with a busy machine for the CPU.
    assert down.elapsed - up.elapsed < 20
    assert hung.elapsed - up.elapsed < 20
