"""Where the test suite's CPU goes: seconds of CPU per test module, its own and its subprocesses'.

Runs the suite (or the paths given) under pytest with a small plugin that reads, around every
test, the CPU of the test process itself and of the subprocesses it has waited for
(``getrusage``): the agent turns, the runs, Chromium. It prints the modules by CPU, with their
wall time and test count, and the totals beside the whole command's own CPU figures.

    uv run python bench/bench_suite.py                        # the whole suite, as .ci/run runs it
    uv run python bench/bench_suite.py tests/e2e -n 0 --top 15  # some paths, in one process

What it cannot see: a process that outlives its test and is reaped later (a session's trace
store is charged to the test that ends it), a detached daemon, the workers' collection. The
figures move with the machine's load (two runs of the same code on a shared machine differ
by up to a fifth); compare runs taken one after the other.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PLUGIN = '''
import json, os, resource, time
import pytest

def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own0, kids0 = _cpu()
    t0 = time.monotonic()
    yield
    own1, kids1 = _cpu()
    row = {"id": item.nodeid, "own": own1 - own0, "kids": kids1 - kids0, "wall": time.monotonic() - t0}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["OBAI_BENCH_SUITE_DIR"], worker + ".jsonl"), "a") as out:
        out.write(json.dumps(row) + "\\n")
'''


def by_module(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = defaultdict(lambda: {"own": 0.0, "kids": 0.0, "wall": 0.0, "tests": 0})
    for row in rows:
        m = out[row["id"].split("::")[0]]
        m["own"] += row["own"]
        m["kids"] += row["kids"]
        m["wall"] += row["wall"]
        m["tests"] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25, help="how many modules to list (default 25)")
    args, pytest_args = ap.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        (Path(tmp) / "obai_bench_suite_plugin.py").write_text(PLUGIN, encoding="utf-8")
        env = {**os.environ, "OBAI_BENCH_SUITE_DIR": tmp,
               "PYTHONPATH": os.pathsep.join(p for p in (tmp, os.environ.get("PYTHONPATH", "")) if p)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "obai_bench_suite_plugin",
                               "-p", "no:cacheprovider", *pytest_args], cwd=REPO, env=env)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [json.loads(line) for f in Path(tmp).glob("*.jsonl") for line in f.read_text().splitlines()]
    modules = by_module(rows)
    print(f"\n{'CPU s':>7} {'own':>6} {'subproc':>7} {'wall s':>7} {'tests':>5}  module")
    for name, m in sorted(modules.items(), key=lambda kv: -(kv[1]["own"] + kv[1]["kids"]))[:args.top]:
        print(f"{m['own'] + m['kids']:7.1f} {m['own']:6.1f} {m['kids']:7.1f} {m['wall']:7.1f} {m['tests']:5d}  {name}")
    own = sum(m["own"] for m in modules.values())
    kids = sum(m["kids"] for m in modules.values())
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(f"\nin tests: {own + kids:.0f} s CPU ({own:.0f} s in the test processes, {kids:.0f} s in their "
          f"subprocesses), {len(rows)} tests in {len(modules)} modules")
    print(f"the whole command: {wall:.0f} s wall, {user:.0f} s user + {system:.0f} s system = "
          f"{user + system:.0f} s CPU (pytest exit {done.returncode})")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
