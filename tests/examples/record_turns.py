"""Recording an example agent's turns against a fresh local trace store (the record.py scripts beside it).

Each turn is asked in a thread of its own conversation (``rec-<name>``); the trace the store made
of it is written as ``<name>.trace.json`` (trace and spans as ``inspect-trace --raw --json``
prints them) and, with a ``stdout_suffix``, what the agent printed as ``<name><stdout_suffix>`` in
``here``. With ``ok_codes``, a turn that exits with another code ends the recording.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

# (name, question, faults) -> (argv, the variables the agent gets beyond the store's)
Asker = Callable[[str, str, str], tuple[list[str], dict]]


def obai(args: list[str], env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "obai_e2e", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        sys.exit(f"obai-e2e {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def record(here: Path, project: str, turns: dict[str, tuple[str, str]], command: Asker,
           stdout_suffix: str | None = ".stdout.json", *, ok_codes: tuple[int, ...] | None = None,
           workers: int = 2, timeout_s: float = 300) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        env = {**os.environ, "OBAI_E2E_RUNS": str(Path(tmp) / "runs"), "OBAI_TRACE_STORE_DIR": str(store)}
        started = json.loads(obai(["traces", "start"], env))
        try:
            def ask(item):
                name, (question, faults) = item
                argv, extra = command(name, question, faults)
                done = subprocess.run(argv, env={**env, **started["env"], **extra}, capture_output=True, text=True,
                                      timeout=timeout_s)
                if ok_codes is not None and done.returncode not in ok_codes:
                    sys.exit(f"{name}: exit {done.returncode}: {done.stderr[-2000:]}")
                return name, done.stdout

            with ThreadPoolExecutor(max_workers=workers) as pool:
                printed = dict(pool.map(ask, turns.items()))
            os.environ["OBAI_TRACE_STORE_DIR"] = str(store)
            from obai_e2e.trace import raw
            from obai_e2e.trace.backend import client, connect_to
            from obai_e2e.trace.resolve import as_dict, fetch

            backend = connect_to("local", project, start_local=False)
            for name in turns:
                found = client(backend).search_traces(project_name=project, filter_string=f'thread_id = "rec-{name}"')
                fetched = fetch(backend, as_dict(found[0])["id"])
                tree = raw.tree(fetched.trace, fetched.spans)
                (here / f"{name}.trace.json").write_text(json.dumps(tree, indent=1, ensure_ascii=False) + "\n")
                if stdout_suffix:
                    (here / f"{name}{stdout_suffix}").write_text(printed[name])
                print(f"recorded {name}")
        finally:
            obai(["traces", "stop", "--store-dir", str(store)], env)
