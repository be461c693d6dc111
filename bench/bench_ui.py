"""Benchmark of the ui channel: the same questions through the demo's web chat and its CLI.

Starts the local trace store and, through the harness's own ui driver (drive/ui.py, the
bundled target.yaml), ``obai-demo serve`` and Chromium; asks each question once through
the page and once as ``obai-demo ask``. Prints, per channel, the wall time of a question
(the page: from loading it to reading the finished answer; the CLI: the process), the
first-token and done times the page measured, the one-off start of the web chat and the
browser, and the CPU the CLI turns used. Last line: the figures as JSON.

    uv run python bench/bench_ui.py [--questions 6]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from obai_e2e.config.target import load_target_config  # noqa: E402
from obai_e2e.drive.ui import UiChannel  # noqa: E402
from obai_e2e.trace.backend import connect  # noqa: E402

QUESTIONS = [
    "What is the latest price of AAPL?",
    "What is Microsoft's net margin and P/E?",
    "Backtest AAPL: buy when RSI(14) drops below 30, sell when it rises above 70.",
    "What are the odds the Fed cuts rates in December 2026?",
    "What is my max loss if I sell a naked call on AAPL at strike 200 for a 4.50 premium?",
    "Write me a poem about cats.",
]


def median_ms(values: list[float]) -> int:
    return int(round(statistics.median(values) * 1000))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=len(QUESTIONS))
    args = ap.parse_args()
    questions = (QUESTIONS * (args.questions // len(QUESTIONS) + 1))[:args.questions]
    config = load_target_config()
    backend = connect(config)
    channel = UiChannel(config, backend)

    t0 = time.monotonic()
    channel._ensure()  # the web chat and Chromium, started once per run
    start_s = time.monotonic() - t0
    ui_wall, first, done = [], [], []
    try:
        for q in questions:
            turn, obs = channel.ask(q, f"bench-{uuid.uuid4().hex[:8]}", f"bench-{uuid.uuid4().hex}")
            assert obs.state == "done", obs
            ui_wall.append(turn.wall_ms / 1000)
            first.append((obs.first_token_ms or 0) / 1000)
            done.append((obs.done_ms or 0) / 1000)
    finally:
        channel.close()

    env = {**os.environ, **config.target.env, **backend.sdk_env, "OBAI_DEMO_HOME": tempfile.mkdtemp(prefix="bench-ui-")}
    cli_wall = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for q in questions:
        t = time.monotonic()
        subprocess.run(["obai-demo", "ask", q], env=env, capture_output=True, timeout=300)
        cli_wall.append(time.monotonic() - t)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli_cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / len(questions)

    out = {"questions": len(questions), "ui_start_s": round(start_s, 2),
           "ui_question_ms_median": median_ms(ui_wall), "ui_first_token_ms_median": median_ms(first),
           "ui_done_ms_median": median_ms(done), "cli_turn_ms_median": median_ms(cli_wall),
           "cli_cpu_s_per_turn": round(cli_cpu, 2)}
    print(f"ui channel: web chat + Chromium start {out['ui_start_s']} s once; a question {out['ui_question_ms_median']} ms "
          f"(median of {len(questions)}; first token {out['ui_first_token_ms_median']} ms, done "
          f"{out['ui_done_ms_median']} ms after sending)")
    print(f"cli channel: a turn {out['cli_turn_ms_median']} ms (median), {out['cli_cpu_s_per_turn']} s CPU per turn")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
