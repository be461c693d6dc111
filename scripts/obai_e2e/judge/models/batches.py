"""Which packets go into which request, and one response from several batch replies.

A round goes to each judge as its whole bundle (``bundle.md``, byte for byte) when it
fits the configured batch size; otherwise in batches of packets, each rendered with the
same frozen prompt. The replies of a judge's batches are merged into one response: the
entries of every reply with a valid envelope.
"""
from __future__ import annotations

import json

from ...base.errors import FrozenArtifactChanged
from ...base.fsutil import sha256_bytes, sha256_file
from ..contract import problems
from ..panel import schema as response_schema
from ..panel.bundle import prompt_path, render_bundle
from ..panel.responses import parse
from ..panel.rounds import Round

NUMBER_MARGIN = 16  # characters per packet for the "Packet i of n" numbering a batch may add


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


def merge(raws: list[str]) -> str:
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
