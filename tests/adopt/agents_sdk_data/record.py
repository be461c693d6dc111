"""Re-record the OpenAI Agents SDK traces the adopt tests read.

    uv run python tests/adopt/agents_sdk_data/record.py [--agent-python PATH]

Asks agent.py (an Agents SDK agent traced by Opik's OpikTracingProcessor, with a scripted
model: offline) a few questions against a fresh local trace store, each with its own
session, and writes ``<name>.trace.json`` for each turn beside this file (the raw trace and
spans, as ``inspect-trace --raw --json`` prints them). The agent runs in an environment of
its own that has ``openai-agents`` and ``opik`` (the project does not depend on the SDK):
``--agent-python`` names its interpreter; without it ``uv run --isolated`` makes one.
Ids and times change on every recording; the tests do not depend on them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = "desk-agents-recorded"
AGENT_ENV = ["uv", "run", "--isolated", "--no-project", "--with", "openai-agents==0.24.0", "--with",
             "opik==2.2.122", "python"]
TURNS = {
    "price": "How is Apple trading today?",
    "revenue": "What is the revenue of Microsoft?",
    "price_revenue": "What is the price and revenue of NVIDIA?",
    "msft_price": "What is the stock price of MSFT?",
    "poem": "Write me a poem about the sea.",
    "weather": "Will it rain in Paris tomorrow?",
    "nvda_trading": "How is Nvidia trading?",
}


def obai(args: list[str], env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "obai_e2e", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        sys.exit(f"obai-e2e {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent-python", help="an interpreter with openai-agents and opik installed")
    args = p.parse_args()
    python = [args.agent_python] if args.agent_python else AGENT_ENV
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        env = {**os.environ, "OBAI_E2E_RUNS": str(Path(tmp) / "runs"), "OBAI_TRACE_STORE_DIR": str(store)}
        started = json.loads(obai(["traces", "start"], env))
        agent_env = {**env, **started["env"], "OPIK_PROJECT_NAME": PROJECT}
        try:
            for name, question in TURNS.items():
                done = subprocess.run([*python, str(HERE / "agent.py"), "--session", f"rec-{name}", question],
                                      env=agent_env, capture_output=True, text=True, timeout=600)
                if done.returncode not in (0, 3):
                    sys.exit(f"agent.py {name}: exit {done.returncode}: {done.stderr[-2000:]}")
            os.environ["OBAI_TRACE_STORE_DIR"] = str(store)
            from obai_e2e.trace import raw
            from obai_e2e.trace.backend import client, connect_to
            from obai_e2e.trace.resolve import as_dict, fetch

            backend = connect_to("local", PROJECT, start_local=False)
            for name in TURNS:
                found = client(backend).search_traces(project_name=PROJECT, filter_string=f'thread_id = "rec-{name}"')
                fetched = fetch(backend, as_dict(found[0])["id"])
                tree = raw.tree(fetched.trace, fetched.spans)
                (HERE / f"{name}.trace.json").write_text(json.dumps(tree, indent=1, ensure_ascii=False) + "\n")
                print(f"recorded {name}")
        finally:
            obai(["traces", "stop", "--store-dir", str(store)], env)


if __name__ == "__main__":
    main()
