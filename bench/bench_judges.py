"""Benchmark of the model-judge client against the loopback fake provider.

The fake provider (tests/fake_provider.py) runs in its own process and reports how long
its handler took for each request. With a real round's bundle (the demo run kept under
tests/judging/data, ~23 KB) the script times, per request:

- ``floor``: a bare ``http.client`` POST of the same body (keep-alive), the transport floor;
- ``ask``: ``Asker.ask`` (request building, httpx, reply parsing, retry bookkeeping)
  for the Anthropic and the OpenAI wire format;
- ``round``: ``ask_round`` of a three-judge panel on a fresh round, per judge (adds the
  cache write with fsync, validation and the write-once response), concurrency 3.

Overhead = client time − the server's own handler time (target ≤ 5 ms per request).

With ``--runs N`` it also times whole runs of the smoke suite with ``--jobs 4``, N times
each without judges and with three configured judges on the fake (interleaved), and
prints the extra wall time the panel adds; ``--delay S`` makes every answer take S
seconds, as a model's would. Prints the figures as text and, last, as one JSON line.

    uv run python bench/bench_judges.py [--requests 200] [--rounds 10] [--runs 3] [--delay 0]
"""
from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from judging.helpers import copy_run, make_round  # noqa: E402
from obai_e2e.config.cases import load_cases_for  # noqa: E402
from obai_e2e.config.target import load_target_config  # noqa: E402
from obai_e2e.judge.models.ask import ask_round  # noqa: E402
from obai_e2e.judge.models.client import Asker  # noqa: E402
from obai_e2e.judge.models.config import parse  # noqa: E402
from obai_e2e.judge.models.keys import redactor_for  # noqa: E402

KEYS = {"BENCH_KEY_A": "sk-bench-a-0001", "BENCH_KEY_B": "sk-bench-b-0002", "BENCH_KEY_C": "sk-bench-c-0003"}


def start_server(delay: float = 0.0) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_provider.py"), "--delay", str(delay)],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def handler_times(url: str) -> list[float]:
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    conn.request("GET", "/_stats")
    data = json.loads(conn.getresponse().read())
    conn.close()
    return data["handler_s"]


def panel_data(url: str) -> dict:
    return {"version": 1, "concurrency": 3, "judges": [
        {"name": "claude", "provider": "anthropic", "model": "claude-bench", "base_url": url,
         "api_key_env": "BENCH_KEY_A", "timeout_s": 30},
        {"name": "gpt", "provider": "openai", "model": "gpt-bench", "base_url": url + "/v1",
         "api_key_env": "BENCH_KEY_B", "timeout_s": 30},
        {"name": "llama", "provider": "openai", "model": "llama-bench", "base_url": url + "/v1",
         "api_key_env": "BENCH_KEY_C", "timeout_s": 30}]}


def panel(url: str):
    return parse(panel_data(url), source="bench")


def time_runs(n: int, delay: float, work: Path, env: dict) -> dict:
    """Wall time of ``run --smoke --jobs 4`` without and with three judges, interleaved, ``n`` times each."""
    import yaml

    proc, url = start_server(delay)
    judges_file = work / "judges.yaml"
    judges_file.write_text(yaml.safe_dump(panel_data(url)))
    env = {**env, "OBAI_E2E_RUNS": str(work / "runs"), "OBAI_TRACE_STORE_DIR": str(work / "store")}
    env.pop("OBAI_DEMO_FAULTS", None)
    walls = {"without": [], "with": []}
    phase = []
    try:
        for i in range(n + 1):  # the first pair warms the store and the caches; it is not counted
            for kind in ("without", "with"):
                extra = ["--judges-file", str(judges_file)] if kind == "with" else []
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "obai_e2e", "run", "--smoke", "--jobs", "4",
                                       "--no-html", *extra], cwd=ROOT, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t0
                assert done.returncode in (0, 1, 3), done.stderr[-2000:]
                if i:
                    walls[kind].append(wall)
                    if kind == "with":
                        phase.append(json.loads(done.stdout)["judges"]["seconds"])
    finally:
        proc.terminate()
        proc.wait()
        subprocess.run([sys.executable, "-m", "obai_e2e", "traces", "stop"], env=env, capture_output=True)
    extra = [w - wo for w, wo in zip(walls["with"], walls["without"])]
    return {"delay_s": delay, "runs": n, "without_s": [round(w, 2) for w in walls["without"]],
            "with_s": [round(w, 2) for w in walls["with"]], "extra_median_s": round(statistics.median(extra), 2),
            "extra_of_medians_s": round(statistics.median(walls["with"]) - statistics.median(walls["without"]), 2),
            "panel_phase_s": phase, "panel_phase_median_s": round(statistics.median(phase), 2)}


def ms(values: list[float]) -> dict:
    values = sorted(values)
    return {"median_ms": round(statistics.median(values) * 1000, 3),
            "p90_ms": round(values[max(0, math.ceil(0.9 * len(values)) - 1)] * 1000, 3), "n": len(values)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200, help="timed requests per measurement (default 200)")
    ap.add_argument("--rounds", type=int, default=10, help="fresh three-judge rounds asked (default 10)")
    ap.add_argument("--runs", type=int, default=0, help="smoke runs timed without and with judges (default 0)")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds each fake answer takes in --runs (default 0)")
    args = ap.parse_args()
    env = {**os.environ, **KEYS}
    config = load_target_config(None)
    cases = load_cases_for(config)
    work = Path(tempfile.mkdtemp(prefix="bench-judges-"))
    proc, url = start_server()
    out = {}
    try:
        run = copy_run(work / "seed")
        bundle = (make_round(run, config, cases).dir / "bundle.md").read_text(encoding="utf-8")
        cfg = panel(url)

        # floor: the same Messages request body through http.client, one connection
        body = json.dumps({"model": "claude-bench", "max_tokens": 16000,
                           "messages": [{"role": "user", "content": bundle}]}).encode()
        u = urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port)
        headers = {"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"}
        floor, seen0 = [], None
        for i in range(args.requests + 10):
            t0 = time.perf_counter()
            conn.request("POST", "/v1/messages", body=body, headers=headers)
            conn.getresponse().read()
            if i >= 10:
                floor.append(time.perf_counter() - t0)
        conn.close()
        seen0 = len(handler_times(url))
        out["floor"] = ms(floor)
        out["floor"]["server_handler"] = ms(handler_times(url)[seen0 - args.requests:seen0])

        for name in ("claude", "gpt"):
            judge = cfg.judge(name)
            with Asker(cfg, redactor_for(cfg, env), env=env) as asker:
                for _ in range(10):
                    asker.ask(judge, bundle)
                start = len(handler_times(url))
                times = []
                for _ in range(args.requests):
                    t0 = time.perf_counter()
                    res = asker.ask(judge, bundle)
                    times.append(time.perf_counter() - t0)
                    assert res.answered, res.error
            server = handler_times(url)[start:start + args.requests]
            overhead = [c - s for c, s in zip(times, server)]
            out[f"ask_{judge.provider}"] = {**ms(times), "server_handler": ms(server), "overhead": ms(overhead)}

        per_judge = []
        for r in range(args.rounds):
            rr = copy_run(work / f"r{r}")
            make_round(rr, config, cases)
            start = len(handler_times(url))
            t0 = time.perf_counter()
            res = ask_round(rr, "r1", cfg, env=env)
            wall = time.perf_counter() - t0
            assert res["requests"] == 3, res
            server = sum(handler_times(url)[start:start + 3])
            per_judge.append((wall - server / 3) / 3)  # three requests in flight together
            shutil.rmtree(rr)
        out["round_per_judge"] = ms(per_judge)
        if args.runs:
            out["run_jobs4"] = time_runs(args.runs, args.delay, work, env)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)

    print(f"bundle: {len(bundle):,} characters; figures per request, median (p90)")
    print(f"  floor http.client     {out['floor']['median_ms']:.2f} ms ({out['floor']['p90_ms']:.2f}); "
          f"server handler {out['floor']['server_handler']['median_ms']:.2f} ms")
    for k in ("ask_anthropic", "ask_openai"):
        o = out[k]
        print(f"  {k:<21} {o['median_ms']:.2f} ms ({o['p90_ms']:.2f}); server handler "
              f"{o['server_handler']['median_ms']:.2f} ms; overhead {o['overhead']['median_ms']:.2f} ms "
              f"({o['overhead']['p90_ms']:.2f}) [target ≤ 5 ms]")
    o = out["round_per_judge"]
    print(f"  ask_round, per judge  {o['median_ms']:.2f} ms ({o['p90_ms']:.2f}) beyond the server's time "
          "(cache write + fsync, validation, write-once response; 3 judges in flight)")
    if "run_jobs4" in out:
        r = out["run_jobs4"]
        print(f"  run --smoke --jobs 4: without judges {r['without_s']} s, with 3 judges {r['with_s']} s "
              f"(answers take {r['delay_s']:g} s)")
        print(f"    extra wall time: median of pairs {r['extra_median_s']} s, difference of medians "
              f"{r['extra_of_medians_s']} s; the panel phase itself (generate, ask, aggregate) "
              f"{r['panel_phase_s']} s, median {r['panel_phase_median_s']} s")
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
