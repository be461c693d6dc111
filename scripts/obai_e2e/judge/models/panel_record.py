"""``panel.json``: who a round was asked of, written at the first ask and compared at every later one.

It records the judges (name, provider, model, family, settings; never a key), the
budget, the prompt hash and the batch plan, so a resumed run asks the same judges the
same requests, and the report can name every judge, also one that never answered.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...base.clock import iso, utc_now
from ...base.errors import UsageError
from ...base.fsutil import sha256_bytes, write_once_json
from ..panel.rounds import Round
from .batches import batch_texts, plan_batches
from .budget import show
from .config import PanelConfig

PANEL_FILE = "panel.json"
PANEL_VERSION = 1


def _who(judges) -> list[tuple]:
    return [(j["name"], j["provider"], j["model"]) if isinstance(j, dict) else (j.name, j.provider, j.model)
            for j in judges]


def panel_file(rnd: Round) -> Path:
    return rnd.dir / PANEL_FILE


def load_panel(rnd: Round) -> dict | None:
    f = panel_file(rnd)
    return json.loads(f.read_text(encoding="utf-8")) if f.exists() else None


def matches(record: dict | None, cfg: PanelConfig) -> bool:
    return record is not None and _who(record["judges"]) == _who(cfg.judges)


def record_panel(rnd: Round, cfg: PanelConfig) -> dict:
    """The round's panel record: written at the first ask, compared at every later one."""
    record = load_panel(rnd)
    if record is not None:
        if not matches(record, cfg):
            was = ", ".join(f"{n} ({p} {m})" for n, p, m in _who(record["judges"]))
            now = ", ".join(f"{n} ({p} {m})" for n, p, m in _who(cfg.judges))
            raise UsageError(f"round {rnd.name!r} was asked of {was}; the configuration now names {now}. A round "
                             "keeps its judges: generate a new round for another panel")
        return record
    batches = plan_batches(rnd, cfg.batch_max_chars, cfg.batch_max_packets)
    texts = batch_texts(rnd, batches)
    record = {
        "schema_version": PANEL_VERSION, "round": rnd.name, "created_at": iso(utc_now()),
        "config": {"source": cfg.source, "sha256": cfg.sha256},
        "judges": [j.identity() for j in cfg.judges], "families": cfg.families(),
        "budget": {"max_tokens": cfg.budget.max_tokens, "currency": cfg.budget.currency,
                   "max_cost": None if cfg.budget.max_cost is None else show(cfg.budget.max_cost)},
        "prompt_sha256": rnd.manifest["prompt"]["sha256"],
        "batches": [{"index": i, "packets": b, "bundle_sha256": sha256_bytes(t.encode("utf-8")), "chars": len(t)}
                    for i, (b, t) in enumerate(zip(batches, texts))],
    }
    write_once_json(panel_file(rnd), record)
    return record
