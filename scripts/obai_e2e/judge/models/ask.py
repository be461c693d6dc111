"""Asking a configured panel to answer one generated round.

Each judge gets the round's bundle (or its batches, see ``batches``) in one request per
batch. Requests run ``concurrency`` at a time, batch by batch, so that a budget stop
leaves whole packets unasked rather than one judge short everywhere. Every reply is
stored in the cache the moment it arrives; a judge whose replies are all in is stored
through the ordinary ``judge-response`` path (raw text, validation, the one audited
repair, write-once), so ``replay-judges`` checks it like any other. With one batch the
stored raw text is the reply as received; with several it is one JSON object holding the
entries of every batch reply that parsed (each reply stays in the cache as received).

``panel.json`` (write-once) records who was asked, the batch plan and the prompt hash;
``asks.jsonl`` gets one line per time the round is asked (requests, cache hits, tokens,
cost, each judge's failures and why, a budget stop).
"""
from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Callable

from ...base.clock import iso, utc_now
from ...base.errors import FrozenArtifactChanged, UsageError
from ...base.fsutil import append_text, sha256_bytes
from ..panel.responses import store
from ..panel.rounds import Round, judging_lock, load_round
from . import cache, wire
from .batches import batch_texts, merge
from .budget import Ledger, Usage, show
from .client import Asker, CallResult
from .config import Judge, PanelConfig, public_url
from .keys import key_values, mask_keys, preflight, redactor_for
from .panel_record import record_panel
from .sending import send

ASKS_FILE = "asks.jsonl"

ANSWERED, CACHED, FAILED, BUDGET = "answered", "cached", "failed", "budget_stopped"


def _record(rnd: Round, judge: Judge, batch: dict, n_batches: int, key: dict, key_sha: str, text: str,
            result: CallResult, usage: Usage, keys: list[str]) -> dict:
    """The cache record of one request: the reply as received (keys masked), or a lasting failure."""
    reply = result.reply
    out = {
        "key": key, "key_sha256": key_sha, "round": rnd.name,
        "batch": {"index": batch["index"], "count": n_batches, "packets": batch["packets"]},
        "judge": judge.identity(), "received_at": iso(utc_now()),
        "request": None if judge.provider == "command" else {
            "url": public_url(wire.url(judge)), "params": wire.settings(judge), "bundle_chars": len(text)},
        "usage": usage.to_json(), "attempts": result.attempts, "seconds": result.seconds,
    }
    if not result.answered:
        return {**out, "status": FAILED, "error": result.error}
    raw, masked = mask_keys(reply.text, keys)
    return {**out, "response": {"http_status": result.http_status, "model": reply.response_model,
                                "id": reply.response_id, "stop_reason": reply.stop_reason,
                                "truncated": reply.truncated},
            "raw": raw, "raw_sha256": sha256_bytes(raw.encode("utf-8")), "raw_keys_masked": masked}


def _texts(rnd: Round, batches: list[dict]) -> list[str]:
    """The bundle text of each batch, checked against the hash recorded when the panel was first asked."""
    texts = batch_texts(rnd, [b["packets"] for b in batches])
    for b, t in zip(batches, texts):
        if sha256_bytes(t.encode("utf-8")) != b["bundle_sha256"]:
            raise FrozenArtifactChanged(f"batch {b['index']} of round {rnd.name!r} no longer renders as it was "
                                        "asked; generate a new round")
    return texts


def _queue(rnd: Round, cfg: PanelConfig, batches: list[dict], texts: list[str], prompt_sha: str, stored: set,
           outcomes: dict) -> list[tuple]:
    """The requests still to send; a request the cache answers (or failed for good) goes to ``outcomes``."""
    queue = []
    for b, text in zip(batches, texts):
        for judge in cfg.judges:
            if judge.name in stored:
                continue
            key, key_sha = cache.key(sha256_bytes(text.encode("utf-8")), judge.name, judge.model, prompt_sha,
                                     wire.request_sha256(judge))
            record = cache.load(cache.path(rnd.dir, key_sha))
            if record is not None and cache.failed(record):
                outcomes[(judge.name, b["index"])] = {"status": FAILED, "error": record["error"], "cached": True}
            elif record is not None:
                outcomes[(judge.name, b["index"])] = {"status": CACHED, "record": record}
            else:
                queue.append((b, text, judge, key, key_sha))
    return queue


class _Asking:
    """The callbacks of one sending: reserve budget before a request, settle and store what comes back."""

    def __init__(self, run_dir: Path, rnd: Round, cfg: PanelConfig, n_batches: int, keys: list[str],
                 outcomes: dict, say: Callable[[str], None]):
        self.rnd, self.n_batches, self.keys, self.outcomes, self.say = rnd, n_batches, keys, outcomes, say
        self.ledger = Ledger(cfg, *cache.spent(run_dir))
        self.spend = {"input": 0, "output": 0, "cost": Decimal(0), "priced": True, "requests": 0}
        self.reservations: dict = {}

    def count(self, usage: Usage, judge: Judge) -> None:
        spend = self.spend
        spend["input"] += usage.input_tokens
        spend["output"] += usage.output_tokens
        spend["priced"] &= usage.cost is not None or judge.provider == "command"
        spend["cost"] += usage.cost or Decimal(0)

    def admit(self, b: dict, text: str, judge: Judge) -> bool:
        reservation = self.ledger.reserve(judge, text)
        if reservation is not None:
            self.reservations[(judge.name, b["index"])] = reservation
        return reservation is not None

    def before_retry(self, b: dict, text: str, judge: Judge, attempt: dict) -> bool:
        return self.ledger.retry(self.reservations[(judge.name, b["index"])], judge, text, attempt)

    def on_reply(self, b: dict, text: str, judge: Judge, key: dict, key_sha: str, result: CallResult) -> None:
        self.spend["requests"] += len(result.attempts)
        usage = self._settle(b, text, judge, result)
        path = cache.path(self.rnd.dir, key_sha)
        if not result.answered:
            outcome = {"status": FAILED, "error": result.error, "attempts": result.attempts, "seconds": result.seconds}
            if result.lasting:  # asking again would fail the same way: kept like a reply
                cache.save(path, _record(self.rnd, judge, b, self.n_batches, key, key_sha, text, result, usage,
                                         self.keys))
                outcome["cached"] = True
            self.outcomes[(judge.name, b["index"])] = outcome
            self.say(f"judges: {judge.name} ({judge.model}) gave no answer for batch {b['index']}: {result.error}")
            return
        record = _record(self.rnd, judge, b, self.n_batches, key, key_sha, text, result, usage, self.keys)
        cache.save(path, record)
        self.outcomes[(judge.name, b["index"])] = {"status": ANSWERED,
                                                   "record": {"schema_version": cache.RECORD_VERSION, **record}}

    def _settle(self, b: dict, text: str, judge: Judge, result: CallResult) -> Usage:
        """Settle the request's reservation; a failed billable attempt is charged and written to the cache."""
        reservation = self.reservations.pop((judge.name, b["index"]))
        usage = self.ledger.settle(reservation, judge, text, result.reply,
                                   result.attempts[-1] if result.attempts else None)
        for charged in reservation.charged:
            cache.charge(self.rnd.dir, {"judge": judge.name, "model": judge.model, "batch": b["index"],
                                        "at": iso(utc_now()), "usage": charged.to_json(),
                                        "why": "a billable attempt failed (timeout or broken "
                                        "connection): charged its reservation"})
            self.count(charged, judge)
        self.count(usage, judge)
        return usage


def ask_round(run_dir: Path, round_name: str, cfg: PanelConfig, *, env=None,
              say: Callable[[str], None] = lambda m: None) -> dict:
    """Ask every judge of ``cfg`` that has no stored response in the round; store what they answer."""
    env = os.environ if env is None else env
    run_dir = Path(run_dir)
    rnd = load_round(run_dir, round_name)
    if rnd.aggregate_path.exists():
        return {"round": round_name, "status": "aggregated_already", "calls": 0, "requests": 0, "cache_hits": 0}
    if len(cfg.judges) != rnd.panel_size:
        raise UsageError(f"round {round_name!r} was generated for a panel of {rnd.panel_size}; the configuration "
                         f"names {len(cfg.judges)} judges")
    if rnd.packets:
        preflight(cfg, env)
    with judging_lock(run_dir):
        panel = record_panel(rnd, cfg)  # an empty round records its panel too, so a resumed run finds it
    if not rnd.packets:
        return {"round": round_name, "status": "nothing_to_judge", "calls": 0, "requests": 0, "cache_hits": 0}
    batches = panel["batches"]
    texts = _texts(rnd, batches)
    stored = {p.stem for p in rnd.response_files()}
    redactor, keys = redactor_for(cfg, env), key_values(cfg, env)
    outcomes: dict[tuple[str, int], dict] = {}
    queue = _queue(rnd, cfg, batches, texts, panel["prompt_sha256"], stored, outcomes)
    asking = _Asking(run_dir, rnd, cfg, len(batches), keys, outcomes, say)
    unsent = send(cfg, Asker(cfg, redactor, env=env), queue, asking.admit, asking.on_reply,
                  asking.before_retry) if queue else []
    for b, _text, judge, _k, _ks in unsent:
        outcomes[(judge.name, b["index"])] = {"status": BUDGET, "error": asking.ledger.stopped}
    if unsent:
        say(f"judges: budget reached, {len(unsent)} request(s) not sent: {asking.ledger.stopped}")
    summary = {
        "round": round_name, "status": "asked", "at": iso(utc_now()),
        "judges": _store_judges(run_dir, round_name, cfg, batches, outcomes, stored),
        **_spending(outcomes, asking.spend, cfg), "budget_stopped": asking.ledger.stopped,
    }
    append_text(rnd.dir / ASKS_FILE, json.dumps(redactor.data(summary), sort_keys=True, ensure_ascii=False) + "\n")
    return summary


def _store_judges(run_dir: Path, round_name: str, cfg: PanelConfig, batches: list, outcomes: dict,
                  stored: set) -> dict:
    """Store the response of each judge whose batches all came in; what became of each judge."""
    out = {}
    for judge in cfg.judges:
        if judge.name in stored:
            out[judge.name] = {"status": "stored_before"}
            continue
        parts = [outcomes.get((judge.name, b["index"]), {"status": FAILED, "error": "not asked"}) for b in batches]
        got = [p["record"]["raw"] for p in parts if p["status"] in (ANSWERED, CACHED)]
        missing = [{"batch": b["index"], "status": p["status"], "error": p.get("error")}
                   for b, p in zip(batches, parts) if p["status"] not in (ANSWERED, CACHED)]
        if not got:
            out[judge.name] = {"status": "no_answer", "batches_missing": missing}
            continue
        raw = got[0] if len(batches) == 1 else merge(got)
        with judging_lock(run_dir):
            res = store(run_dir, round_name, judge.name, judge.model, raw)
        out[judge.name] = {"status": res["status"], "parse_ok": res["parse_ok"], "structure_ok": res["structure_ok"],
                           "valid": res["valid"], "repaired": res["repaired"], "refused": res["refused"],
                           "absent": res["absent"], "parse_error": res.get("parse_error"),
                           "batches_missing": missing}
    return out


def _spending(outcomes: dict, spend: dict, cfg: PanelConfig) -> dict:
    calls = []
    for (name, index), o in sorted(outcomes.items()):
        item = {"judge": name, "batch": index, "status": o["status"]}
        if "record" in o:
            item.update(key_sha256=o["record"]["key_sha256"], usage=o["record"]["usage"],
                        attempts=len(o["record"]["attempts"]), seconds=o["record"]["seconds"])
        else:
            item.update(error=o.get("error"), attempts=len(o.get("attempts", [])), cached=bool(o.get("cached")))
        calls.append(item)
    return {"calls": sum(1 for c in calls if c["status"] in (ANSWERED, FAILED) and not c.get("cached")),
            "requests": spend["requests"], "cache_hits": sum(1 for c in calls if c["status"] == CACHED),
            "tokens": {"input": spend["input"], "output": spend["output"]},
            "cost": show(spend["cost"]) if spend["priced"] else None, "currency": cfg.budget.currency,
            "detail": calls}
