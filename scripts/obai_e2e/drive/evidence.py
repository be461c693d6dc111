"""Reading a unit's traces once more after every turn of the run ended: are they still what was read?

Enters: the run's driven units (their packets: each resolved turn's trace id, when it was read
and the digest of what was read), on a backend where a later write cannot be prevented (a real
Opik: the key an agent writes with can PATCH any trace of the workspace and delete the project).
Leaves: ``traces/<unit>.reread.json`` per unit (write-once, :class:`~.packet_record.Reread`),
which ``load_packet`` attaches and the rubric reads first: a trace written to after its turn
makes the unit inconclusive ``trace_changed_after_turn``, a trace or project gone
``trace_deleted``, a trace that could not be read again ``opik_unreachable``.

Never against the local store: there each turn writes with a key of its own that can update only
what it created and delete nothing, so a read costs the store's CPU and shows nothing. One read
per unit and run: a unit with a re-read or a verdict is not read again.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

from ..base.clock import iso, utc_now
from ..base.errors import Interrupted
from ..base.fsutil import dumps_json, write_once
from ..base.procs import STOPPING
from ..config.target import TargetConfig
from ..config.units import Unit
from ..trace import freshness
from ..trace.backend import Backend, is_unreachable_error
from ..trace.resolve import RESOLVED, UNREACHABLE, fetch
from .packet_record import UNCHANGED, Packet, Reread, TraceBlock, TurnReread, load_packet, reread_path

MAX_READERS = 4  # traces read at a time


def needs_reread(kind: str) -> bool:
    """True where a write after a turn cannot be prevented, only detected: any kind of backend but the local store."""
    return kind != "local"


def reread_turn(config: TargetConfig, backend: Backend, role: str, block: TraceBlock, ended_at: str) -> TurnReread:
    """Read one turn's trace and spans again and compare them with the packet's record of the first read."""
    b = config.backend
    allowance = freshness.allowance_s(b.flush_timeout_s, b.clock_skew_s)
    trace_id = block.trace_id or ""
    try:
        again = fetch(backend, trace_id, deadline_s=0.0)
    except Exception as exc:  # noqa: BLE001 - classified: gone, unreachable, or the backend's own error
        if freshness.is_gone(exc):
            return TurnReread(role, trace_id, freshness.DELETED, freshness.gone_message(backend, trace_id, block.read_at))
        why = "did not answer" if is_unreachable_error(exc) else "failed"
        return TurnReread(role, trace_id, UNREACHABLE,
                          f"reading the trace {trace_id} again to show it unchanged since its turn {why}: "
                          f"{type(exc).__name__}: {exc}"[:500])
    late = freshness.late_writes(again.trace, again.spans, ended_at, allowance)
    if late:
        return TurnReread(role, trace_id, freshness.CHANGED, freshness.describe_late(trace_id, late, ended_at, allowance))
    now = freshness.content_sha256(again.trace, again.spans)
    if block.content_sha256 and now != block.content_sha256:
        return TurnReread(role, trace_id, freshness.CHANGED,
                          f"the trace {trace_id} and its spans differ from what was read at {block.read_at} (SHA-256 "
                          f"now {now[:12]}…, then {block.content_sha256[:12]}…): written after its turn ended (or, on a "
                          "backend that shows writes late, not yet all visible when it was read)")
    return TurnReread(role, trace_id, UNCHANGED)


def turns_to_reread(packet: Packet) -> list[tuple[str, TraceBlock, str]]:
    """(role, trace block, the turn's end) of each resolved turn of the packet."""
    out = [("initial", packet.trace, packet.turn.ended_at)]
    if packet.followup is not None:
        out.append(("followup", packet.followup.trace, packet.followup.turn.ended_at))
    return [(role, block, end) for role, block, end in out if block.status == RESOLVED and block.trace_id]


def reread_unit(config: TargetConfig, backend: Backend, run_dir: Path, packet: Packet) -> Reread | None:
    """Read the unit's resolved traces again and store the outcome once; None when it has no trace to read."""
    turns = turns_to_reread(packet)
    if not turns:
        return None
    record = Reread(unit_id=packet.unit_id, read_at=iso(utc_now()),
                    turns=[reread_turn(config, backend, role, block, end) for role, block, end in turns])
    write_once(reread_path(run_dir, packet.unit_id), dumps_json(record.to_json()))
    return record


def reread_all(config: TargetConfig, backend: Backend, run_dir: Path, units: Iterable[Unit]) -> list[str]:
    """Re-read every driven unit of ``units`` that has no re-read yet (after the run's last turn ended); the ids
    of the units whose traces did not stay as they were read."""
    if not needs_reread(backend.kind):
        return []
    todo = [u for u in units if not reread_path(run_dir, u.id).exists()]

    def one(unit: Unit) -> str | None:
        if STOPPING.is_set():
            raise Interrupted("the run was stopped while its traces were read again")
        packet = load_packet(run_dir, unit.id)
        record = reread_unit(config, backend, run_dir, packet) if packet is not None else None
        return unit.id if record is not None and record.problem() is not None else None

    if not todo:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_READERS, len(todo)), thread_name_prefix="reread") as pool:
        return [uid for uid in pool.map(one, todo) if uid]
