"""Re-record the harbor-desk (PydanticAI, OpenTelemetry) traces the fast tests read.

    uv run python tests/examples/harbor_data/record.py

Asks examples/pydantic-agent's ``harbor-desk`` a few questions (some with a fault set)
against a fresh local trace store in a temporary directory (the agent exports its spans over
OTLP/HTTP to the store's OTLP path), each in a session of its own, and writes for each turn
``<name>.trace.json`` (the trace and spans as the store made them from the spans, as
``inspect-trace --raw --json`` prints them) and ``<name>.stdout.json`` (what the agent printed)
beside this file. Ids and times change on every recording; the tests do not depend on them.
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
PROJECT = "harbor-desk-recorded"
ETA, BOTH, CARGO = ("When is the Aurora due?", "What berth fee does the Kestrel pay and when does it arrive?",
                    "How much cargo does the Solstice carry?")
# name: (question, faults)
TURNS = {
    "eta": (ETA, ""),
    "tariff_eta": (BOTH, ""),
    "cargo": (CARGO, ""),
    "refused": ("Write me a poem about the sea.", ""),
    "cargo_manifest_down": (CARGO, "manifest_down"),
    "eta_raises": (ETA, "eta_raises"),
    "tariff_eta_strict_screen": (BOTH, "strict_screen"),
    "tariff_eta_skip_tariff": (BOTH, "skip_tariff"),
    "eta_stray_figure": (ETA, "stray_figure"),
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
        agent_env = {**env, **started["env"], "HARBOR_PROJECT": PROJECT}
        try:
            def ask(item):
                name, (question, faults) = item
                done = subprocess.run([shutil.which("harbor-desk"), "ask", "--session", f"rec-{name}", question],
                                      env={**agent_env, "HARBOR_FAULTS": faults}, capture_output=True, text=True,
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
                (HERE / f"{name}.stdout.json").write_text(printed[name])
                print(f"recorded {name}")
        finally:
            obai(["traces", "stop", "--store-dir", str(store)], env)


if __name__ == "__main__":
    main()
