"""Every paid reply, stored once: ``D/judging/<round>/calls/<key>.json``.

The key is the sha256 of (bundle hash, judge, model, prompt hash): the exact text sent,
who was asked and under which frozen prompt. A reply is stored write-once as soon as it
arrives, before it is validated or combined, so a run killed half-way, resumed or
re-rendered never pays for it again. The records also hold the tokens and cost of each
reply; their sum over the run is what the budget counts as spent.
"""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from ...base.errors import UsageError
from ...base.fsutil import sha256_bytes, write_once_json
from ..panel.rounds import judging_dir

CALLS_DIR = "calls"
RECORD_VERSION = 1


def key(bundle_sha256: str, judge: str, model: str, prompt_sha256: str) -> tuple[dict, str]:
    """The cache key and its sha256 (the record's file name)."""
    k = {"bundle_sha256": bundle_sha256, "judge": judge, "model": model, "prompt_sha256": prompt_sha256}
    return k, sha256_bytes(json.dumps(k, sort_keys=True).encode("utf-8"))


def path(round_dir: Path, key_sha256: str) -> Path:
    return Path(round_dir) / CALLS_DIR / f"{key_sha256}.json"


def load(file: Path) -> dict | None:
    try:
        return json.loads(Path(file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{file}: a stored judge reply is not valid JSON ({exc.msg} at line {exc.lineno}); "
                         "the run directory is damaged") from None


def save(file: Path, record: dict) -> bool:
    return write_once_json(file, {"schema_version": RECORD_VERSION, **record})


def records(run_dir: Path) -> list[dict]:
    """Every stored reply of the run, all rounds."""
    d = judging_dir(run_dir)
    if not d.exists():
        return []
    return [r for f in sorted(d.glob(f"*/{CALLS_DIR}/*.json")) if (r := load(f)) is not None]


def spent(run_dir: Path) -> tuple[int, Decimal]:
    """(tokens, cost) paid so far by the run: the sum over its stored replies."""
    tokens, cost = 0, Decimal(0)
    for r in records(run_dir):
        u = r.get("usage") or {}
        tokens += int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0)
        if u.get("cost") is not None:
            cost += Decimal(u["cost"])
    return tokens, cost
