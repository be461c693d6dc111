"""A configured panel over a run: find or generate its round, ask the judges, aggregate.

A run asks one panel once. If a round asked of the same judges exists it is reused: an
aggregated one is the answer already (nothing is asked), an unfinished one is resumed
(only what is not in the cache is asked). Otherwise a new round is generated. The
aggregate counts a judge without a stored response as no vote, so a judge that failed
or was stopped by the budget leaves its questions to the others, and a question without
a majority stays undecided.
"""
from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Callable

from ...config.target import TargetConfig
from ...config.units import Unit
from ..panel.aggregate import aggregate_round
from ..panel.packets import generate
from ..panel.rounds import judging_lock, load_round, round_names
from . import cache
from .budget import show
from .ask import ask_round, load_panel, matches
from .config import PanelConfig


def _next_round(run_dir: Path) -> str:
    names = set(round_names(run_dir))
    n = len(names) + 1
    while f"r{n}" in names or (Path(run_dir) / "judging" / f"r{n}").exists():
        n += 1
    return f"r{n}"


def find_round(run_dir: Path, cfg: PanelConfig) -> str | None:
    """The newest round asked of exactly these judges, if any."""
    for name in reversed(round_names(run_dir)):
        if matches(load_panel(load_round(run_dir, name, verify=False)), cfg):
            return name
    return None


def run_panel(run_dir: Path, config: TargetConfig, units: list[Unit], cfg: PanelConfig, *, env=None,
              say: Callable[[str], None] = lambda m: None) -> dict:
    """Generate (or resume) the panel's round, ask the judges, aggregate; the result says what it cost."""
    env = os.environ if env is None else env
    run_dir = Path(run_dir)
    for w in cfg.warnings():
        say(f"judges: {w}")
    with judging_lock(run_dir):
        name = find_round(run_dir, cfg)
        generated = None
        if name is None:
            name = _next_round(run_dir)
            generated = generate(run_dir, config, units, round_name=name, panel_size=len(cfg.judges))
    asked = ask_round(run_dir, name, cfg, env=env, say=say)
    rnd = load_round(run_dir, name)
    if not rnd.aggregate_path.exists() and rnd.response_files():
        with judging_lock(run_dir):
            aggregate_round(run_dir, name, allow_missing=True)
    return {"round": name, "generated": generated is not None, "asked": asked,
            "aggregate": str(rnd.aggregate_path) if rnd.aggregate_path.exists() else None,
            **summary(run_dir, name)}


def summary(run_dir: Path, round_name: str | None = None) -> dict:
    """Judge tokens and cost over the run, and the agreement of ``round_name`` (or the newest round)."""
    records = cache.records(run_dir)
    tokens_in = sum(int((r.get("usage") or {}).get("input_tokens") or 0) for r in records)
    tokens_out = sum(int((r.get("usage") or {}).get("output_tokens") or 0) for r in records)
    costs = [(r.get("usage") or {}).get("cost") for r in records if r["judge"]["provider"] != "command"]
    cost = None if any(c is None for c in costs) else show(sum((Decimal(c) for c in costs), Decimal(0)))
    names = [round_name] if round_name else list(reversed(round_names(run_dir)))
    agreement, judges = None, []
    for name in names:
        path = Path(run_dir) / "judging" / name / "aggregate.json"
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            overall = data["agreement"]["overall"]
            agreement = {k: overall[k] for k in ("items", "percent_agreement", "fleiss_kappa")}
            judges = [{"judge": j, "model": f["model"]} for j, f in sorted(data["judge_figures"].items())]
            break
    tokens = {"input": tokens_in, "output": tokens_out, "total": tokens_in + tokens_out}
    return {"replies": len(records), "tokens": tokens, "cost": cost, "agreement": agreement, "judges": judges}


def summary_line(s: dict, currency: str = "USD") -> str:
    """``judges: 3 replies, 12,345 tokens, 0.0421 USD, agreement 0.87 (κ 0.61)``."""
    parts = [f"{s['replies']} repl{'y' if s['replies'] == 1 else 'ies'}", f"{s['tokens']['total']:,} tokens"]
    parts.append("cost unknown" if s["cost"] is None else f"{s['cost']} {currency}")
    a = s.get("agreement")
    if a and a["items"]:
        kappa = "κ n/a" if a["fleiss_kappa"] is None else f"κ {a['fleiss_kappa']:.2f}"
        parts.append(f"agreement {a['percent_agreement']:.2f} ({kappa}, {a['items']} items)")
    else:
        parts.append("agreement: no item every judge answered")
    return "judges: " + ", ".join(parts)
