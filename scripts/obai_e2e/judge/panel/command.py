"""Running a blind judge panel from the command line: one program per judge.

Each judge is a fresh process of ``command`` that receives the round's bundle (the
frozen judge prompt and every packet, nothing else) on stdin and prints its JSON answer
on stdout. ``OBAI_JUDGE_LABEL`` tells it which judge it is. Any program that can read a
prompt and answer works: a scripted judge in tests, or an LLM CLI in CI.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from ...base.errors import UsageError
from ...config.target import TargetConfig
from ...config.units import Unit
from .aggregate import aggregate_round
from .packets import generate
from .responses import store
from .rounds import judging_lock, round_names

JUDGE_TIMEOUT_S = 900


def next_round(run_dir: Path) -> str:
    names = round_names(run_dir)
    return f"r{len(names) + 1}"


def run_panel(run_dir: Path, config: TargetConfig, units: list[Unit], command: str, *, judges: int = 3, model: str | None = None,
              timeout_s: float = JUDGE_TIMEOUT_S) -> dict:
    """Generate a round, ask every judge, store each raw answer, aggregate."""
    if judges < 3:
        raise UsageError("a judge panel needs at least 3 independent judges")
    argv = shlex.split(command)
    if not argv:
        raise UsageError("--panel-command is empty")
    run_dir = Path(run_dir)
    round_name = next_round(run_dir)
    with judging_lock(run_dir):
        gen = generate(run_dir, config, units, round_name=round_name, panel_size=judges)
    bundle = (run_dir / "judging" / round_name / "bundle.md").read_text(encoding="utf-8")
    stored = []
    for i in range(1, judges + 1):
        label = f"J{i}"
        env = {**os.environ, "OBAI_JUDGE_LABEL": label}
        try:
            done = subprocess.run(argv, input=bundle, capture_output=True, text=True, timeout=timeout_s, env=env)
            raw = done.stdout
        except FileNotFoundError:
            raise UsageError(f"judge command not found: {argv[0]!r}") from None
        except subprocess.TimeoutExpired:
            raw = ""
        with judging_lock(run_dir):
            stored.append(store(run_dir, round_name, label, model or f"command:{Path(argv[0]).name}", raw))
    with judging_lock(run_dir):
        agg = aggregate_round(run_dir, round_name, allow_missing=True)
    return {"round": round_name, "packets": gen.get("packets") if isinstance(gen, dict) else None,
            "judges": judges, "aggregate": str(run_dir / "judging" / round_name / "aggregate.json"),
            "agreement": (agg.get("agreement") or {}).get("overall") if isinstance(agg, dict) else None}
