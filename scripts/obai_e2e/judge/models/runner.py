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
import time
from decimal import Decimal
from pathlib import Path
from typing import Callable

from ...config.target import TargetConfig
from ...config.units import Unit
from ..panel.aggregate import aggregate_round
from ..panel.calibration import for_results
from ..panel.packets import generate
from ..panel.rounds import judging_lock, load_round, round_names
from . import cache
from .ask import ask_round
from .budget import show
from .config import PanelConfig
from .outcomes import budget_state, judge_outcomes, latest_round, questions_state
from .panel_record import load_panel, matches


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
    started = time.monotonic()
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
            "seconds": round(time.monotonic() - started, 3), **summary(run_dir, name)}


def summary(run_dir: Path, round_name: str | None = None) -> dict:
    """Judge tokens and cost over the run (replies and charged failures), and the agreement and undecided
    questions of ``round_name`` (or the newest round a panel was asked for)."""
    usages = cache.usages(run_dir)
    tokens_in = sum(int(u.get("input_tokens") or 0) for u, _ in usages)
    tokens_out = sum(int(u.get("output_tokens") or 0) for u, _ in usages)
    costs = [u.get("cost") for u, provider in usages if provider != "command"]
    cost = None if any(c is None for c in costs) else show(sum((Decimal(c) for c in costs), Decimal(0)))
    rnd = load_round(run_dir, round_name, verify=False) if round_name else latest_round(run_dir)
    agreement, judges, undecided, left, calibrated = None, [], [], [], None
    if rnd is not None:
        if rnd.aggregate_path.exists():
            data = json.loads(rnd.aggregate_path.read_text(encoding="utf-8"))
            overall = data["agreement"]["overall"]
            agreement = {k: overall[k] for k in ("items", "percent_agreement", "fleiss_kappa")}
            judges = [{"judge": j, "model": f["model"]} for j, f in sorted(data["judge_figures"].items())]
            calibrated = for_results(data.get("calibration"))
        undecided, left = questions_state(rnd)
    tokens = {"input": tokens_in, "output": tokens_out, "total": tokens_in + tokens_out}
    return {"replies": len(cache.records(run_dir)), "tokens": tokens, "cost": cost, "agreement": agreement,
            "judges": judges, "undecided": undecided, "left_undecided": left, "calibration": calibrated}


def report_block(run_dir: Path) -> dict | None:
    """The run's panel for results.json: the newest round a panel was asked for (or whose answers were
    combined), each judge's outcome, what it cost against the budget, agreement, what stayed undecided.

    A round stored by hand (the chat flow) has no panel record: its judges are listed
    with the models they named, without provider or family.
    """
    rnd = latest_round(run_dir)
    if rnd is None:
        return None
    panel = load_panel(rnd)
    s = summary(run_dir, rnd.name)
    judges = judge_outcomes(rnd, panel)
    answered = sum(j["answered"] for j in judges)
    budget = budget_state(run_dir, rnd, panel) if panel else None
    return {"round": rnd.name, "configured": bool(panel), "panel_size": rnd.panel_size, "judges": judges,
            "answered": answered, "complete": answered >= rnd.panel_size and not (budget or {}).get("stopped"),
            "families": (panel or {}).get("families"), "replies": s["replies"], "tokens": s["tokens"],
            "cost": s["cost"], "currency": ((panel or {}).get("budget") or {}).get("currency"),
            "agreement": s["agreement"], "undecided": s["undecided"], "left_undecided": s["left_undecided"],
            "calibration": s["calibration"], "budget": budget}


def summary_line(s: dict, currency: str = "USD") -> str:
    """``judges: 3 replies, 12,345 tokens, 0.0421 USD, agreement 0.87 (κ 0.61, 8 items)``, then what went wrong."""
    parts = [f"{s['replies']} repl{'y' if s['replies'] == 1 else 'ies'}", f"{s['tokens']['total']:,} tokens"]
    parts.append("cost unknown (a model has no price)" if s["cost"] is None else f"{s['cost']} {currency}")
    a = s.get("agreement")
    if a and a["items"]:
        kappa = "κ n/a" if a["fleiss_kappa"] is None else f"κ {a['fleiss_kappa']:.2f}"
        parts.append(f"agreement {a['percent_agreement']:.2f} ({kappa}, {a['items']} items)")
    else:
        parts.append("agreement: no item every judge answered")
    asked = s.get("asked") or {}
    if s.get("undecided"):
        n = len(s["undecided"])
        parts.append(f"{n} question{'' if n == 1 else 's'} without a majority (undecided)")
    if "requests" in asked:
        parts.append(f"{asked['requests']} request{'' if asked['requests'] == 1 else 's'} sent now")
    silent = sorted(j for j, v in (asked.get("judges") or {}).items() if v.get("status") == "no_answer")
    if silent:
        parts.append(f"no answer from {', '.join(silent)}")
    if asked.get("budget_stopped"):
        parts.append(f"budget reached ({asked['budget_stopped'].split(':', 1)[0]}): unasked questions stay undecided")
    if s.get("left_undecided"):
        parts.append(f"decided for no unit: {', '.join(s['left_undecided'])} (the run is inconclusive)")
    return "judges: " + "; ".join([", ".join(parts[:4]), *parts[4:]])


def brief(result: dict, cfg: PanelConfig) -> dict:
    """What a run reports about its panel: round, judges and models, tokens, cost, agreement, the summary line."""
    asked = result.get("asked") or {}
    return {"round": result["round"], "judges": [{k: j.identity()[k] for k in ("name", "provider", "model", "family")}
                                                 for j in cfg.judges],
            "replies": result["replies"], "requests": asked.get("requests", 0), "seconds": result.get("seconds"),
            "tokens": result["tokens"],
            "cost": result["cost"], "currency": cfg.budget.currency, "agreement": result["agreement"],
            "budget_stopped": asked.get("budget_stopped"), "undecided": result.get("undecided", []),
            "left_undecided": result.get("left_undecided", []),
            "no_answer": sorted(j for j, v in (asked.get("judges") or {}).items() if v.get("status") == "no_answer"),
            "line": summary_line(result, cfg.budget.currency)}
