"""Re-record the desk-graph (LangGraph) traces the fast tests read.

    uv run python tests/examples/graph_data/record.py

Asks examples/langgraph-agent's ``desk-graph`` a few questions (some with a fault set)
against a fresh local trace store in a temporary directory, each in its own thread, and
writes for each turn ``<name>.trace.json`` (the raw trace and spans, as ``inspect-trace
--raw --json`` prints them) and ``<name>.stdout.jsonl`` (what the agent printed) beside this
file. Ids and times change on every recording; the tests do not depend on them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = "desk-graph-recorded"
# name: (question, faults)
TURNS = {
    "price": ("How is Apple trading today?", ""),
    "price_revenue": ("What is the price and revenue of NVDA?", ""),
    "financials": ("What are Microsoft's revenue and P/E?", ""),
    "naked_call": ("I want to sell a naked call on AAPL at strike 200 for a 4.50 premium. What is my max loss?", ""),
    "condor": ("Iron condor on MSFT 440/450/490/500 for a 3.20 credit: what is the payoff?", ""),
    "general": ("What is a dividend?", ""),
    "refused": ("Write me a poem about the sea.", ""),
    "price_feed_down": ("How is Apple trading today?", "feed_down"),
    "financials_strict_screen": ("What are Microsoft's revenue and P/E?", "strict_screen"),
    "price_revenue_skip_playbook": ("What is the price and revenue of NVDA?", "skip_playbook"),
    "price_stray_figure": ("How is Apple trading today?", "stray_figure"),
}


def obai(args: list[str], env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "obai_e2e", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        sys.exit(f"obai-e2e {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        env = {**os.environ, "OBAI_E2E_RUNS": str(Path(tmp) / "runs"), "OBAI_TRACE_STORE_DIR": str(store)}
        started = json.loads(obai(["traces", "start"], env))
        agent_env = {**env, **started["env"], "DESK_GRAPH_PROJECT": PROJECT}
        try:
            def ask(item):
                name, (question, faults) = item
                done = subprocess.run([shutil.which("desk-graph"), "ask", "--thread", f"rec-{name}", question],
                                      env={**agent_env, "DESK_GRAPH_FAULTS": faults}, capture_output=True, text=True,
                                      timeout=300)
                return name, done.stdout

            with ThreadPoolExecutor(max_workers=2) as pool:
                printed = dict(pool.map(ask, TURNS.items()))
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
                (HERE / f"{name}.stdout.jsonl").write_text(printed[name])
                print(f"recorded {name}")
        finally:
            obai(["traces", "stop", "--store-dir", str(store)], env)


if __name__ == "__main__":
    main()
