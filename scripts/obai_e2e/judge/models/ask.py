"""Asking a configured panel to answer one generated round.

Each judge gets the round's bundle (``bundle.md``, byte for byte) in one request, or,
when the bundle is larger than the configured batch size, the same frozen prompt with a
batch of the packets per request. Requests run ``concurrency`` at a time, batch by
batch, so that a budget stop leaves whole packets unasked rather than one judge short
everywhere. Every reply is stored in the cache the moment it arrives; a judge whose
replies are all in is stored through the ordinary ``judge-response`` path (raw text,
validation, the one audited repair, write-once), so ``replay-judges`` checks it like any
other. With one batch the stored raw text is the reply as received; with several it is
one JSON object holding the entries of every batch reply that parsed (each reply stays
in the cache as received).

``panel.json`` (write-once) records who was asked, the batch plan and the prompt hash;
``asks.jsonl`` gets one line per time the round is asked (requests, cache hits, tokens,
cost, failures, a budget stop).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import threading
from decimal import Decimal
from pathlib import Path
from queue import Queue
from typing import Callable

from ...base.clock import iso, utc_now
from ...base.errors import ConfigError, FrozenArtifactChanged, UsageError
from ...base.fsutil import append_text, sha256_bytes, sha256_file, write_once_json
from ...base.redact import MARK, Redactor
from ...config.target import DEFAULT_REDACT
from ..contract import problems
from ..panel import schema as response_schema
from ..panel.packets import prompt_path, render_bundle
from ..panel.responses import parse, store
from ..panel.rounds import Round, judging_lock, load_round
from . import cache
from .budget import Ledger, Usage, show
from .client import Asker, CallResult
from .config import Judge, PanelConfig, public_url
from .wire import build

PANEL_FILE = "panel.json"
ASKS_FILE = "asks.jsonl"
PANEL_VERSION = 1
NUMBER_MARGIN = 16  # characters per packet for the "Packet i of n" numbering a batch may add

ANSWERED, CACHED, FAILED, BUDGET = "answered", "cached", "failed", "budget_stopped"


def redactor_for(cfg: PanelConfig, env) -> Redactor:
    names = [j.api_key_env for j in cfg.judges if j.api_key_env]
    return Redactor(env, [*DEFAULT_REDACT, *names])


def _key_values(cfg: PanelConfig, env) -> list[str]:
    values = {env.get(j.api_key_env) for j in cfg.judges if j.api_key_env}
    return sorted((v for v in values if v), key=len, reverse=True)


def _mask_keys(text: str, keys: list[str]) -> tuple[str, bool]:
    hit = False
    for k in keys:
        if k in text:
            text, hit = text.replace(k, MARK), True
    return text, hit


def preflight(cfg: PanelConfig, env) -> None:
    """Every key is set and every command exists, before anything is asked."""
    for i, j in enumerate(cfg.judges):
        where = f"{cfg.source}: judge {j.name!r}, field /judges/{i}"
        if j.provider == "command":
            exe = shlex.split(j.command)[0]
            found = shutil.which(exe) if "/" not in exe else (exe if os.access(exe, os.X_OK) else None)
            if not found:
                raise ConfigError(f"{where}/command: {exe!r} is not found or not executable")
        elif j.api_key_env and not env.get(j.api_key_env):
            raise ConfigError(f"{where}/api_key_env: the environment variable {j.api_key_env} is not set; "
                              "it must hold the judge's API key (keys are read from the environment only)")


# -- batches ---------------------------------------------------------------------------

def _prompt(rnd: Round) -> str:
    text = prompt_path().read_text(encoding="utf-8")
    if sha256_bytes(text.encode("utf-8")) != rnd.manifest["prompt"]["sha256"]:
        raise FrozenArtifactChanged(f"{prompt_path()} changed since round {rnd.name!r} was generated; its packets "
                                    "cannot be sent in batches under another prompt (generate a new round)")
    return text


def plan_batches(rnd: Round, max_chars: int | None, max_packets: int | None) -> list[list[str]]:
    """Packet ids per request: the whole round when its bundle fits, else greedy batches in id order."""
    pids = sorted(rnd.packets)
    size = len((rnd.dir / "bundle.md").read_text(encoding="utf-8"))
    if (max_chars is None or size <= max_chars) and (max_packets is None or len(pids) <= max_packets):
        return [pids]
    prompt = _prompt(rnd)
    base = len(render_bundle(prompt, []))
    batches, current, used = [], [], base
    for pid in pids:
        grow = len(render_bundle(prompt, [rnd.packets[pid]])) - base + NUMBER_MARGIN
        full = (max_packets is not None and len(current) >= max_packets) or \
               (max_chars is not None and used + grow > max_chars)
        if current and full:
            batches.append(current)
            current, used = [], base
        current.append(pid)
        used += grow
    batches.append(current)
    return batches


def batch_texts(rnd: Round, batches: list[list[str]]) -> list[str]:
    bundle = rnd.dir / "bundle.md"
    if sha256_file(bundle) != rnd.manifest["bundle_sha256"]:
        raise FrozenArtifactChanged(f"{bundle} changed since round {rnd.name!r} was generated")
    if len(batches) == 1 and sorted(batches[0]) == sorted(rnd.packets):
        return [bundle.read_text(encoding="utf-8")]
    prompt = _prompt(rnd)
    return [render_bundle(prompt, [rnd.packets[p] for p in batch]) for batch in batches]


# -- panel.json ------------------------------------------------------------------------

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


def _panel(rnd: Round, cfg: PanelConfig) -> dict:
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


# -- asking ----------------------------------------------------------------------------

def _merge(raws: list[str]) -> str:
    """One response from several batch replies: the entries of every reply with a valid envelope."""
    entries, usable = [], False
    for raw in raws:
        value, parsed = parse(raw)
        if parsed["ok"] and not problems(value, response_schema.envelope_schema()):
            entries.extend(value["packets"])
            usable = True
    if not usable:
        return "\n\n".join(raws)  # nothing parsed: keep the texts, so the parse failure is what is recorded
    return json.dumps({"packets": entries}, ensure_ascii=False, indent=1)


def _record(rnd: Round, judge: Judge, batch: dict, n_batches: int, key: dict, key_sha: str, text: str,
            result: CallResult, usage: Usage, keys: list[str]) -> dict:
    reply = result.reply
    raw, masked = _mask_keys(reply.text, keys)
    req = build(judge, "", None) if judge.provider != "command" else None
    return {
        "key": key, "key_sha256": key_sha, "round": rnd.name,
        "batch": {"index": batch["index"], "count": n_batches, "packets": batch["packets"]},
        "judge": judge.identity(), "received_at": iso(utc_now()),
        "request": None if req is None else {
            "url": public_url(req.url), "params": {k: v for k, v in req.body.items() if k != "messages"},
            "bundle_chars": len(text)},
        "response": {"http_status": result.http_status, "model": reply.response_model, "id": reply.response_id,
                     "stop_reason": reply.stop_reason, "truncated": reply.truncated},
        "usage": usage.to_json(), "attempts": result.attempts, "seconds": result.seconds,
        "raw": raw, "raw_sha256": sha256_bytes(raw.encode("utf-8")), "raw_keys_masked": masked,
    }


def _send(cfg: PanelConfig, asker: Asker, queue: list, admit: Callable[..., bool],
          on_reply: Callable[..., None]) -> list:
    """Send the queued requests, ``cfg.concurrency`` at a time, in order, while ``admit`` lets them.

    Each request runs on a daemon thread, so an interrupted run ends at once instead of
    waiting for requests in flight (judge commands still running are ended). Replies are
    handed to ``on_reply`` on this thread. Returns the requests never sent.
    """
    finished: Queue = Queue()

    def work(token: int, judge: Judge, text: str) -> None:
        try:
            finished.put((token, asker.ask(judge, text)))
        except BaseException as exc:  # noqa: BLE001 - handed to the scheduler, which raises it
            finished.put((token, exc))

    pending, running, token, unsent = list(queue), {}, 0, []
    try:
        while pending or running:
            while pending and len(running) < cfg.concurrency:
                b, text, judge, _key, _key_sha = pending[0]
                if not admit(b, text, judge):
                    unsent, pending = pending, []  # the budget is reached: nothing more is sent
                    break
                token += 1
                running[token] = pending.pop(0)
                threading.Thread(target=work, args=(token, judge, text), daemon=True,
                                 name=f"judge-{judge.name}-{b['index']}").start()
            if not running:
                break
            done, result = finished.get()
            if isinstance(result, BaseException):
                raise result
            on_reply(*running.pop(done), result)
    except BaseException:
        asker.abort()
        raise
    asker.close()
    return unsent


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
        panel = _panel(rnd, cfg)  # an empty round records its panel too, so a resumed run finds it
    if not rnd.packets:
        return {"round": round_name, "status": "nothing_to_judge", "calls": 0, "requests": 0, "cache_hits": 0}
    batches = panel["batches"]
    texts = batch_texts(rnd, [b["packets"] for b in batches])
    for b, t in zip(batches, texts):
        if sha256_bytes(t.encode("utf-8")) != b["bundle_sha256"]:
            raise FrozenArtifactChanged(f"batch {b['index']} of round {round_name!r} no longer renders as it was "
                                        "asked; generate a new round")
    prompt_sha = panel["prompt_sha256"]
    stored = {p.stem for p in rnd.response_files()}
    redactor, keys = redactor_for(cfg, env), _key_values(cfg, env)

    outcomes: dict[tuple[str, int], dict] = {}
    queue = []
    for b, text in zip(batches, texts):
        for judge in cfg.judges:
            if judge.name in stored:
                continue
            key, key_sha = cache.key(sha256_bytes(text.encode("utf-8")), judge.name, judge.model, prompt_sha)
            record = cache.load(cache.path(rnd.dir, key_sha))
            if record is not None:
                outcomes[(judge.name, b["index"])] = {"status": CACHED, "record": record}
            else:
                queue.append((b, text, judge, key, key_sha))

    ledger = Ledger(cfg, *cache.spent(run_dir))
    spend = {"input": 0, "output": 0, "cost": Decimal(0), "priced": True, "requests": 0}

    def on_reply(b: dict, text: str, judge: Judge, key: dict, key_sha: str, result: CallResult) -> None:
        spend["requests"] += len(result.attempts)
        usage = ledger.settle(reservations.pop((judge.name, b["index"])), judge, text,
                              result.reply if result.answered else None)
        if not result.answered:
            outcomes[(judge.name, b["index"])] = {"status": FAILED, "error": result.error,
                                                  "attempts": result.attempts, "seconds": result.seconds}
            say(f"judges: {judge.name} ({judge.model}) gave no answer for batch {b['index']}: {result.error}")
            return
        record = _record(rnd, judge, b, len(batches), key, key_sha, text, result, usage, keys)
        cache.save(cache.path(rnd.dir, key_sha), record)
        outcomes[(judge.name, b["index"])] = {"status": ANSWERED,
                                              "record": {"schema_version": cache.RECORD_VERSION, **record}}
        spend["input"] += usage.input_tokens
        spend["output"] += usage.output_tokens
        spend["priced"] &= usage.cost is not None or judge.provider == "command"
        spend["cost"] += usage.cost or Decimal(0)

    def admit(b: dict, text: str, judge: Judge) -> bool:
        reservation = ledger.reserve(judge, text)
        if reservation is not None:
            reservations[(judge.name, b["index"])] = reservation
        return reservation is not None

    reservations: dict = {}
    unsent = _send(cfg, Asker(cfg, redactor, env=env), queue, admit, on_reply) if queue else []
    for b, _text, judge, _k, _ks in unsent:
        outcomes[(judge.name, b["index"])] = {"status": BUDGET, "error": ledger.stopped}
    if unsent:
        say(f"judges: budget reached, {len(unsent)} request(s) not sent: {ledger.stopped}")

    judges_out = {}
    for judge in cfg.judges:
        if judge.name in stored:
            judges_out[judge.name] = {"status": "stored_before"}
            continue
        parts = [outcomes.get((judge.name, b["index"]), {"status": FAILED, "error": "not asked"}) for b in batches]
        got = [p["record"]["raw"] for p in parts if p["status"] in (ANSWERED, CACHED)]
        missing = [{"batch": b["index"], "status": p["status"], "error": p.get("error")}
                   for b, p in zip(batches, parts) if p["status"] not in (ANSWERED, CACHED)]
        if not got:
            judges_out[judge.name] = {"status": "no_answer", "batches_missing": missing}
            continue
        raw = got[0] if len(batches) == 1 else _merge(got)
        with judging_lock(run_dir):
            res = store(run_dir, round_name, judge.name, judge.model, raw)
        judges_out[judge.name] = {"status": res["status"], "parse_ok": res["parse_ok"],
                                  "structure_ok": res["structure_ok"], "valid": res["valid"],
                                  "repaired": res["repaired"], "refused": res["refused"], "absent": res["absent"],
                                  "batches_missing": missing}
    calls = []
    for (name, index), o in sorted(outcomes.items()):
        item = {"judge": name, "batch": index, "status": o["status"]}
        if "record" in o:
            item.update(key_sha256=o["record"]["key_sha256"], usage=o["record"]["usage"],
                        attempts=len(o["record"]["attempts"]), seconds=o["record"]["seconds"])
        else:
            item.update(error=o.get("error"), attempts=len(o.get("attempts", [])))
        calls.append(item)
    summary = {
        "round": round_name, "status": "asked", "at": iso(utc_now()),
        "calls": sum(1 for c in calls if c["status"] in (ANSWERED, FAILED)),
        "requests": spend["requests"], "cache_hits": sum(1 for c in calls if c["status"] == CACHED),
        "tokens": {"input": spend["input"], "output": spend["output"]},
        "cost": show(spend["cost"]) if spend["priced"] else None, "currency": cfg.budget.currency,
        "budget_stopped": ledger.stopped, "judges": judges_out, "detail": calls,
    }
    append_text(rnd.dir / ASKS_FILE, json.dumps(redactor.data(summary), sort_keys=True, ensure_ascii=False) + "\n")
    return summary
