"""Every paid reply, stored once: ``D/judging/<round>/calls/<key>.json``.

The key is the sha256 of (bundle hash, judge, model, prompt hash and, for a model asked
over HTTP, the hash of the request's framing and settings): the exact text sent, who was
asked, how, and under which frozen prompt. A reply is stored write-once as soon as it
arrives, before it is validated or combined, so a run killed half-way, resumed or
re-rendered never pays for it again. A failure that asking again would repeat (an
answer refused as too large) is stored under its key the same way, with
``"status": "failed"`` and no text: a resumed run does not ask again and the judge keeps
its failed vote. The records also hold the tokens and cost of each reply.

Attempts that failed but may have been billed (a timeout, a broken connection) are
charged their reservation; each charge is a line of ``D/judging/<round>/charges.jsonl``.
What the run spent is the sum over the replies and the charges: the budget counts it.
"""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from ...base.errors import UsageError
from ...base.fsutil import append_text, sha256_bytes, write_once_json
from ..panel.rounds import judging_dir

CALLS_DIR = "calls"
CHARGES_FILE = "charges.jsonl"
RECORD_VERSION = 1


def key(bundle_sha256: str, judge: str, model: str, prompt_sha256: str,
        request_sha256: str | None = None) -> tuple[dict, str]:
    """The cache key and its sha256 (the record's file name)."""
    k = {"bundle_sha256": bundle_sha256, "judge": judge, "model": model, "prompt_sha256": prompt_sha256}
    if request_sha256 is not None:
        k["request_sha256"] = request_sha256
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


def failed(record: dict) -> bool:
    """A stored failure (no reply), rather than a reply."""
    return record.get("status") == "failed"


def _all(run_dir: Path) -> list[dict]:
    d = judging_dir(run_dir)
    if not d.exists():
        return []
    return [r for f in sorted(d.glob(f"*/{CALLS_DIR}/*.json")) if (r := load(f)) is not None]


def records(run_dir: Path) -> list[dict]:
    """Every stored reply of the run, all rounds (stored failures left out)."""
    return [r for r in _all(run_dir) if not failed(r)]


def charge(round_dir: Path, record: dict) -> None:
    """Keep what a billable failed attempt was charged (one line, appended)."""
    append_text(Path(round_dir) / CHARGES_FILE, json.dumps(record, sort_keys=True) + "\n")


def charges(run_dir: Path) -> list[dict]:
    """Every charge of the run, all rounds (a torn last line is left out)."""
    out = []
    for f in sorted(judging_dir(run_dir).glob(f"*/{CHARGES_FILE}")):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def usages(run_dir: Path) -> list[tuple[dict, str | None]]:
    """(usage, provider) of every reply, stored failure and charge of the run."""
    out = [(r.get("usage") or {}, (r.get("judge") or {}).get("provider")) for r in _all(run_dir)]
    return out + [(c.get("usage") or {}, None) for c in charges(run_dir)]


def spent(run_dir: Path) -> tuple[int, Decimal]:
    """(tokens, cost) paid so far by the run: the sum over its stored replies, failures and charges."""
    tokens, cost = 0, Decimal(0)
    for r in [*_all(run_dir), *charges(run_dir)]:
        u = r.get("usage") or {}
        tokens += int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0)
        if u.get("cost") is not None:
            cost += Decimal(u["cost"])
    return tokens, cost
