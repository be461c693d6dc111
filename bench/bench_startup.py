"""What a process pays before it does any work: `import opik`, one demo turn, each script's --help.

  uv run python bench/bench_startup.py [--reps 5] [--only opik,turn,help,uv]

Every figure is a fresh process of this environment's interpreter, timed from outside:
wall time and CPU (user + system, from the child's rusage), medians over the repetitions.
The interpreter's environment is kept as it is (PYTHONDONTWRITEBYTECODE included), so
the figures show whether the environment holds compiled bytecode; the first line says
how many of the opik package's modules have a .pyc.

  opik     python -c "import opik"
  turn     one demo turn (obai-demo ask) against a local trace store in a temporary folder
  help     python scripts/<name>.py --help for the SKILL.md scripts, and the modules each imports
  uv       uv run python -c pass, and uv run --no-sync (what `uv run` adds around every step)

Prints figures as text and one JSON line at the end.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKILL_SCRIPTS = ("preflight", "new_run", "run_one", "check_case", "record_verdict", "finalize_run")
HEAVY = ("opik", "jsonschema", "markdown_it", "yaml", "jinja2", "httpx", "rich", "filelock")


def timed(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one child process; a failure stops the benchmark."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, done.stdout.decode()


def series(argv: list[str], reps: int, env: dict | None = None, cwd: Path | None = None) -> dict:
    walls, cpus = [], []
    for _ in range(reps):
        wall, cpu, _ = timed(argv, env, cwd)
        walls.append(wall)
        cpus.append(cpu)
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3),
            "wall_min_s": round(min(walls), 3)}


def opik_bytecode() -> dict:
    spec = importlib.util.find_spec("opik")
    root = Path(spec.origin).parent
    sources = list(root.rglob("*.py"))
    tag = sys.implementation.cache_tag
    compiled = sum(1 for s in sources if (s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").exists())
    return {"opik_modules": len(sources), "opik_modules_with_pyc": compiled,
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "")}


def bench_opik(reps: int) -> dict:
    return {"import_opik": series([sys.executable, "-c", "import opik"], reps),
            "python_pass": series([sys.executable, "-c", "pass"], reps)}


def bench_turn(reps: int) -> dict:
    sys.path.insert(0, str(REPO / "scripts"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OBAI_TRACE_STORE_DIR"] = str(Path(tmp) / "store")
        from obai_e2e.tracestore import daemon

        info = daemon.ensure_running()
        try:
            from obai_e2e.base.opik_env import local_store_env

            env = {**os.environ, **local_store_env(info.api_url), "OPIK_PROJECT_NAME": "obai-demo",
                   "OBAI_TRACE_TAG": "bench-startup"}
            demo = shutil.which("obai-demo", path=str(Path(sys.executable).parent)) or "obai-demo"
            argv = [demo, "ask", "--session", "bench", "What is the latest price of AAPL?"]
            return {"demo_turn": series(argv, reps, env=env, cwd=Path(tmp))}
        finally:
            daemon.stop()


def bench_help(reps: int) -> dict:
    out = {}
    probe = ("import sys, json, runpy; sys.argv = [sys.argv[1], '--help']\n"
             "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)")
    for name in SKILL_SCRIPTS:
        script = str(REPO / "scripts" / f"{name}.py")
        figures = series([sys.executable, script, "--help"], reps)
        done = subprocess.run([sys.executable, "-c", probe, script], capture_output=True, text=True)
        figures["imports"] = json.loads(done.stderr.strip().splitlines()[-1]) if done.stderr.strip() else None
        out[name] = figures
    return out


def bench_uv(reps: int) -> dict:
    uv = shutil.which("uv")
    if uv is None:
        return {"skipped": "uv is not on PATH"}
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    return {"uv_run_pass": series([uv, "run", "--quiet", "--project", str(REPO), "python", "-c", "pass"], reps,
                                  env=env),
            "uv_run_no_sync_pass": series([uv, "run", "--quiet", "--no-sync", "--project", str(REPO), "python", "-c",
                                           "pass"], reps, env=env)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--only", default="opik,turn,help,uv")
    args = p.parse_args()
    parts = [s.strip() for s in args.only.split(",") if s.strip()]
    figures: dict = {"environment": opik_bytecode()}
    for part in parts:
        figures[part] = {"opik": bench_opik, "turn": bench_turn, "help": bench_help, "uv": bench_uv}[part](args.reps)
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(json.dumps({"bench": "startup", "reps": args.reps, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
