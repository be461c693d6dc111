"""This harness next to its peers on the same instant cases: wall, CPU and memory per case.

  uv run python bench/bench_peers.py [--n 1000] [--jobs 1,4] [--reps 3] [--peers obai,promptfoo,inspect,agent]
  uv run python bench/bench_peers.py --peers obai --n 100,1000,10000 --jobs 4 --reps 1   # growth

Every peer runs the same N cases against bench/standin_agent.py, which answers a price
question at once and writes its trace to a local trace store, so only each tool's own
cost shows. Each peer checks the agent's answer (it must contain the price):

  obai       obai-e2e run --jobs J: resolves each trace, judges it mechanically, writes
             report.md, results.json, JUnit, suite.json and report.html (a fresh runs folder
             each time, so there is no baseline to compare with)
  promptfoo  promptfoo eval with the exec: provider and a contains assertion, -j J, results
             written to its own database and to a JSON file; npm package pinned to
             --promptfoo-version, installed under ~/.cache/obai-bench/promptfoo
  inspect    inspect eval: a solver that runs the agent with inspect's subprocess helper and
             the includes() scorer, --max-samples J; inspect-ai pinned to --inspect-version,
             installed into a venv under ~/.cache/obai-bench/inspect
  agent      the agent alone, J at a time from a small Python loop: the floor

A peer that is missing is installed first (--no-install: skipped instead); one that cannot
be installed is skipped with the reason. Runs are interleaved (repetition, then size, then
jobs, then every peer, in an order that rotates each repetition) so that a noisy machine
affects all peers alike. Each run gets a fresh trace store; the store's CPU is reported
apart. Figures per run: wall and CPU (the peer's process and every process it started: from
a cgroup of the run's own where one can be made, as root; else from wait4, which misses
processes nobody waited for, such as turns contained by bubblewrap) per case, the CPU of the peer's own process alone (its overhead: the agents
are not in it), and the peak resident memory of the largest of those processes.
Ratios are taken within each repetition against --ratio-to, then the median is printed.

Prints a table and one JSON line at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / "bench" / "standin_agent.py"
CACHE = Path(os.environ.get("OBAI_BENCH_CACHE", Path.home() / ".cache" / "obai-bench"))
PROMPTFOO_VERSION = "0.121.20"
INSPECT_VERSION = "0.3.285"
ANSWER_MARK = "238.41"
QUERY = "What is the latest price of AAPL? (case {i})"
INSTALL_TIMEOUT_S = 1800


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- peers: install


def promptfoo_bin(version: str, install: bool) -> tuple[Path | None, str]:
    home = CACHE / f"promptfoo-{version}"
    exe = home / "node_modules" / ".bin" / "promptfoo"
    if exe.exists():
        return exe, f"promptfoo {version}"
    if not install:
        return None, f"not installed in {home} (run without --no-install)"
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None, "node/npm not on PATH"
    home.mkdir(parents=True, exist_ok=True)
    log(f"installing promptfoo@{version} into {home} (npm) ...")
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(home),
                               f"promptfoo@{version}"], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"npm install did not finish in {INSTALL_TIMEOUT_S} s"
    if done.returncode != 0 or not exe.exists():
        return None, f"npm install failed: {done.stderr.strip()[-300:]}"
    return exe, f"promptfoo {version}"


def inspect_bin(version: str, install: bool) -> tuple[Path | None, str]:
    venv = CACHE / f"inspect-{version}"
    exe = venv / "bin" / "inspect"
    if exe.exists():
        return exe, f"inspect-ai {version}"
    if not install:
        return None, f"not installed in {venv} (run without --no-install)"
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        return None, "uv not on PATH"
    log(f"installing inspect-ai=={version} into {venv} (uv pip) ...")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    try:
        steps = [[uv, "venv", "--quiet", "--python", f"{sys.version_info.major}.{sys.version_info.minor}", str(venv)],
                 [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", str(venv / "bin" / "python"),
                  f"inspect-ai=={version}"]]
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT_S)
            if done.returncode != 0:
                return None, f"{' '.join(argv[:3])} failed: {done.stderr.strip()[-300:]}"
    except subprocess.TimeoutExpired:
        return None, f"installing inspect-ai did not finish in {INSTALL_TIMEOUT_S} s"
    return (exe, f"inspect-ai {version}") if exe.exists() else (None, "inspect-ai installed no `inspect` command")


# ---------------------------------------------------------------- inputs per size


def write_inputs(tmp: Path, n: int) -> dict:
    """The same N cases for every peer: obai target + cases files, promptfoo config, inspect task."""
    d = tmp / f"n{n}"
    d.mkdir(parents=True, exist_ok=True)
    queries = [QUERY.format(i=i) for i in range(n)]

    target = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
    target["target"]["command"] = [sys.executable, str(AGENT), "--session", "{session}", "{query}"]
    target["target"]["version_command"] = [sys.executable, str(AGENT), "--version"]
    target["target"]["workdir"] = str(d)
    (d / "target.yaml").write_text(yaml.safe_dump(target))
    cases = {"version": 1, "cases": [
        {"id": f"B{i:05d}", "feature": "market_data", "query": q, "expected_skills": ["market-data"],
         "expected_tools": ["market_data_analysis"], "labels": {"intent": "price_lookup"}}
        for i, q in enumerate(queries)]}
    (d / "cases.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))

    promptfoo = {
        "description": f"stand-in agent, {n} cases",
        "prompts": ["{{query}}"],
        # The interpreter by its bare name, found on PATH (run_peer puts its folder first): promptfoo's
        # exec: provider reads and hashes every file named in the command on each call, for its cache
        # key, --no-cache or not. Named by path, the interpreter would be hashed 300 times: Debian's
        # python3.11 is a 6.8 MB binary, 10 ms of promptfoo's CPU a case that a user writing
        # `exec: python agent.py` never pays. The agent script is still hashed, as it would be.
        "providers": [{"id": f"exec: {Path(sys.executable).name} {AGENT} --session promptfoo"}],
        "defaultTest": {"assert": [{"type": "contains", "value": ANSWER_MARK}]},
        "tests": [{"vars": {"query": q}} for q in queries],
    }
    (d / "promptfooconfig.yaml").write_text(yaml.safe_dump(promptfoo, sort_keys=False))

    (d / "queries.json").write_text(json.dumps(queries))
    (d / "inspect_task.py").write_text(textwrap.dedent(f'''\
        import json
        from pathlib import Path

        from inspect_ai import Task, task
        from inspect_ai.dataset import Sample
        from inspect_ai.model import ModelOutput
        from inspect_ai.scorer import includes
        from inspect_ai.solver import solver
        from inspect_ai.util import subprocess

        QUERIES = json.loads((Path(__file__).parent / "queries.json").read_text())


        @solver
        def standin():
            async def solve(state, generate):
                done = await subprocess([{sys.executable!r}, {str(AGENT)!r}, "--session", "inspect",
                                         state.input_text])
                state.output = ModelOutput.from_content("standin", done.stdout.strip())
                return state
            return solve


        @task
        def bench():
            return Task(dataset=[Sample(input=q, target={ANSWER_MARK!r}) for q in QUERIES],
                        solver=standin(), scorer=includes())
        '''))

    (d / "agent_loop.py").write_text(textwrap.dedent(f'''\
        import json, subprocess, sys
        from concurrent.futures import ThreadPoolExecutor

        queries = json.load(open(sys.argv[1]))
        jobs = int(sys.argv[2])

        def one(q):
            done = subprocess.run([{sys.executable!r}, {str(AGENT)!r}, "--session", "loop", q],
                                  capture_output=True, text=True, timeout=60)
            return done.returncode == 0 and {ANSWER_MARK!r} in done.stdout

        with ThreadPoolExecutor(jobs) as pool:
            ok = sum(pool.map(one, queries))
        print(json.dumps({{"passed": ok, "total": len(queries)}}))
        '''))
    return {"dir": d, "n": n}


# ---------------------------------------------------------------- one measured run


def proc_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of ``pid`` itself so far, without its children; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuGroup:
    """A cgroup of its own for one measured run, counting the CPU of every process the run starts.

    wait4 counts only processes that were waited for: a turn contained by bubblewrap runs below
    the namespace's init, which nobody of the harness waits for, so its CPU would be missing.
    A cgroup counts every descendant, contained or not. cgroup v1's cpuacct or v2's cpu.stat,
    where this process may make one (as root, usually); None otherwise (then wait4 is used)."""

    ROOTS = (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
    _seq = 0

    def __init__(self, path: Path, v2: bool):
        self.path, self.v2 = path, v2

    @classmethod
    def make(cls) -> "CpuGroup | None":
        cls._seq += 1
        for root in cls.ROOTS:
            v2 = (root / "cgroup.controllers").exists() or (root / "cpu.stat").exists()
            if not (v2 or (root / "cpuacct.usage").exists()):
                continue
            path = root / f"obai-bench-{os.getpid()}-{cls._seq}"
            try:
                path.mkdir()
            except OSError:
                continue
            return cls(path, v2)
        return None

    def enter(self) -> None:
        """In the child before exec: join the group."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def cpu_s(self) -> float:
        if self.v2:
            stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        for _ in range(100):  # the last processes of the run may still be leaving
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)


def measure(argv: list[str], env: dict, cwd: Path, out: Path) -> dict:
    """Run ``argv`` to completion; wall, CPU and peak RSS of it and every process it started.

    CPU is its cgroup's where one can be made (every descendant counted), else wait4's (every
    process it waited for). ``own_cpu_s`` is the peer's main process alone (the agents it
    starts are not in it), sampled every 50 ms while it runs, so the last few milliseconds
    may be missing. Peak RSS is the largest process it waited for.
    """
    group = CpuGroup.make()
    with open(out, "wb") as fh, open(out.parent / "stderr", "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=fh, stderr=err, stdin=subprocess.DEVNULL,
                                preexec_fn=group.enter if group else None)
        own = 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            own = proc_cpu(proc.pid) or own
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu, source = usage.ru_utime + usage.ru_stime, "wait4"
    if group is not None:
        cpu, source = group.cpu_s(), "cgroup"
        group.remove()
    return {"exit": proc.returncode, "wall_s": wall, "cpu_s": cpu, "cpu_source": source,
            "own_cpu_s": own, "rss_mb": usage.ru_maxrss / 1024}


class Store:
    """A fresh local trace store for one run (its CPU is read before it stops)."""

    def __init__(self, root: Path):
        self.dir = root
        self.env = {**os.environ, "OBAI_TRACE_STORE_DIR": str(root)}

    def __enter__(self) -> "Store":
        done = subprocess.run([sys.executable, "-m", "obai_e2e", "traces", "start"], env=self.env,
                              capture_output=True, text=True, timeout=60, check=True)
        info = json.loads(done.stdout)
        self.pid, self.api_url, self.sdk_env = info["pid"], info["api_url"], info["env"]
        self.cpu0 = self.cpu()
        return self

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc) -> None:
        self.used_cpu = self.cpu() - self.cpu0
        subprocess.run([sys.executable, "-m", "obai_e2e", "traces", "stop"], env=self.env, capture_output=True,
                       timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_peer(peer: str, exe: Path | None, inputs: dict, jobs: int, work: Path) -> dict:
    d, n = inputs["dir"], inputs["n"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with Store(work / "store") as store:
        env = {**os.environ, **store.sdk_env, "OBAI_TRACE_STORE_DIR": str(store.dir),
               "OPIK_PROJECT_NAME": "obai-demo"}
        env.pop("OBAI_TRACE_TAG", None)
        if peer == "obai":
            env["OBAI_E2E_RUNS"] = str(work / "runs")
            argv = [sys.executable, "-m", "obai_e2e", "run", "--target", str(d / "target.yaml"),
                    "--cases", str(d / "cases.yaml"), "--jobs", str(jobs)]
        elif peer == "promptfoo":
            env.update(PROMPTFOO_CONFIG_DIR=str(work / "promptfoo-home"), PROMPTFOO_DISABLE_TELEMETRY="1",
                       PROMPTFOO_DISABLE_UPDATE="1", PROMPTFOO_DISABLE_SHARING="1", NO_COLOR="1",
                       PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
            argv = [str(exe), "eval", "-c", str(d / "promptfooconfig.yaml"), "--no-cache", "--no-progress-bar",
                    "--no-table", "--no-share", "-j", str(jobs), "-o", str(work / "promptfoo.json")]
        elif peer == "inspect":
            env.update(INSPECT_DISPLAY="none", INSPECT_LOG_DIR=str(work / "inspect-logs"))
            env.pop("VIRTUAL_ENV", None)
            argv = [str(exe), "eval", "inspect_task.py", "--model", "mockllm/model", "--max-samples",
                    str(jobs), "--max-subprocesses", str(jobs), "--display", "none", "--log-format", "json",
                    "--log-dir", str(work / "inspect-logs")]
        else:
            argv = [sys.executable, str(d / "agent_loop.py"), str(d / "queries.json"), str(jobs)]
        fig = measure(argv, env, d, work / "stdout")
    fig["store_cpu_s"] = store.used_cpu
    fig["passed"] = passed(peer, work, fig)
    if fig["passed"] != n:
        tail = (work / "stderr").read_text(errors="replace")[-1500:] if (work / "stderr").exists() else ""
        raise SystemExit(f"{peer} n={n} -j{jobs}: {fig['passed']} of {n} cases passed (exit {fig['exit']})\n{tail}")
    shutil.rmtree(work, ignore_errors=True)
    return fig


def passed(peer: str, work: Path, fig: dict) -> int:
    """How many cases the peer reported as passed (its own report, read back)."""
    try:
        if peer == "obai":
            return json.loads((work / "stdout").read_text())["summary"]["pass"]
        if peer == "promptfoo":
            return json.loads((work / "promptfoo.json").read_text())["results"]["stats"]["successes"]
        if peer == "inspect":
            logs = sorted((work / "inspect-logs").glob("*.json"))
            data = json.loads(logs[-1].read_text())
            scores = data["results"]["scores"][0]["metrics"]
            return round(scores["accuracy"]["value"] * data["results"]["completed_samples"])
        return json.loads((work / "stdout").read_text())["passed"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return -1


# ---------------------------------------------------------------- the table


def summarize(rows: list[dict], ratio_to: str) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["n"], r["jobs"], r["peer"]), []).append(r)
    out = []
    for (n, jobs, peer), rs in sorted(groups.items()):
        ratios_wall, ratios_cpu, ratios_own = [], [], []
        for r in rs:
            ref = next((x for x in rows if x["n"] == n and x["jobs"] == jobs and x["rep"] == r["rep"]
                        and x["peer"] == ratio_to), None)
            if ref is not None:
                ratios_wall.append(r["wall_s"] / ref["wall_s"])
                ratios_cpu.append(r["cpu_s"] / ref["cpu_s"])
                if ref["own_cpu_s"]:
                    ratios_own.append(r["own_cpu_s"] / ref["own_cpu_s"])
        med = lambda key: statistics.median(x[key] for x in rs)  # noqa: E731
        out.append({"n": n, "jobs": jobs, "peer": peer, "reps": len(rs),
                    "wall_ms_per_case": round(med("wall_s") * 1000 / n, 1),
                    "cpu_ms_per_case": round(med("cpu_s") * 1000 / n, 1),
                    "own_cpu_ms_per_case": round(med("own_cpu_s") * 1000 / n, 1),
                    "store_cpu_ms_per_case": round(med("store_cpu_s") * 1000 / n, 1),
                    "peak_rss_mb": round(med("rss_mb"), 1),
                    "wall_s": round(med("wall_s"), 2),
                    f"wall_ratio_to_{ratio_to}": round(statistics.median(ratios_wall), 3) if ratios_wall else None,
                    f"cpu_ratio_to_{ratio_to}": round(statistics.median(ratios_cpu), 3) if ratios_cpu else None,
                    f"own_cpu_ratio_to_{ratio_to}": round(statistics.median(ratios_own), 3) if ratios_own else None})
    return out


def print_table(summary: list[dict], ratio_to: str) -> None:
    head = ["N", "-j", "peer", "wall ms/case", "CPU ms/case", "own CPU ms/case", "store CPU ms/case", "peak RSS MB",
            f"wall ÷ {ratio_to}", f"CPU ÷ {ratio_to}", f"own CPU ÷ {ratio_to}", "reps"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for s in summary:
        cells = [s["n"], s["jobs"], s["peer"], s["wall_ms_per_case"], s["cpu_ms_per_case"],
                 s["own_cpu_ms_per_case"], s["store_cpu_ms_per_case"], s["peak_rss_mb"], s[f"wall_ratio_to_{ratio_to}"],
                 s[f"cpu_ratio_to_{ratio_to}"], s[f"own_cpu_ratio_to_{ratio_to}"], s["reps"]]
        print("| " + " | ".join("—" if c is None else str(c) for c in cells) + " |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", default="1000", help="case counts, comma-separated (default 1000)")
    p.add_argument("--jobs", default="1,4", help="concurrency levels, comma-separated (default 1,4)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--peers", default="obai,promptfoo,inspect,agent")
    p.add_argument("--ratio-to", default="promptfoo", help="the peer the ratios are taken against")
    p.add_argument("--promptfoo-version", default=PROMPTFOO_VERSION)
    p.add_argument("--inspect-version", default=INSPECT_VERSION)
    p.add_argument("--no-install", action="store_true", help="skip a missing peer instead of installing it")
    args = p.parse_args()
    sizes = [int(s) for s in args.n.split(",") if s.strip()]
    jobs = [int(s) for s in args.jobs.split(",") if s.strip()]
    wanted = [s.strip() for s in args.peers.split(",") if s.strip()]

    peers: dict[str, Path | None] = {}
    versions: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for peer in wanted:
        if peer in ("obai", "agent"):
            peers[peer] = None
            continue
        if peer == "promptfoo":
            exe, note = promptfoo_bin(args.promptfoo_version, not args.no_install)
        elif peer == "inspect":
            exe, note = inspect_bin(args.inspect_version, not args.no_install)
        else:
            raise SystemExit(f"--peers: unknown peer {peer!r} (known: obai, promptfoo, inspect, agent)")
        if exe is None:
            skipped[peer] = note
            log(f"skipping {peer}: {note}")
        else:
            peers[peer] = exe
            versions[peer] = note

    rows = []
    order = list(peers)
    with tempfile.TemporaryDirectory(prefix="obai-bench-peers-") as tmp:
        tmp = Path(tmp)
        inputs = {n: write_inputs(tmp, n) for n in sizes}
        for rep in range(args.reps):
            rotated = order[rep % len(order):] + order[:rep % len(order)]
            for n in sizes:
                for j in jobs:
                    for peer in rotated:
                        fig = run_peer(peer, peers[peer], inputs[n], j, tmp / "work")
                        row = {"rep": rep, "n": n, "jobs": j, "peer": peer, **fig}
                        rows.append(row)
                        log(f"rep {rep + 1}/{args.reps} n={n} -j{j} {peer}: {fig['wall_s']:.1f} s wall, "
                            f"{fig['cpu_s']:.1f} s CPU ({fig['own_cpu_s']:.1f} s its own process), "
                            f"{fig['rss_mb']:.0f} MB, store {fig['store_cpu_s']:.1f} s CPU")
    summary = summarize(rows, args.ratio_to)
    print(f"# {', '.join(f'{k}: {v}' for k, v in versions.items()) or 'no external peer'}; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end; CPU from "
          f"{' and '.join(sorted({r.get('cpu_source', 'wait4') for r in rows})) or 'nothing'}")
    for peer, why in skipped.items():
        print(f"# skipped {peer}: {why}")
    print_table(summary, args.ratio_to)
    print(json.dumps({"bench": "peers", "versions": versions, "skipped": skipped, "summary": summary,
                      "runs": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
