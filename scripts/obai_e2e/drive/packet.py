"""Driving one unit end to end: turn(s) → trace → curated trace → the packet on disk.

The packet ``<run_dir>/<unit>.json`` is written once, atomically; when it exists the
unit is not driven again and the stored packet is returned as it is.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

from ..base import jsonptr
from ..base.clock import iso, utc_now
from ..base.errors import Interrupted, NotReady, ObaiError
from ..base.fsutil import dumps_json, write_once
from ..base.procs import STOPPING
from ..base.redact import Redactor
from ..base.version import __version__
from ..config.cases import Case
from ..config.target import TargetConfig
from ..config.units import Unit
from ..rundir.meta import RunMeta
from ..trace.backend import Backend, connect, is_unreachable_error, settle_s, warm_up
from ..trace import freshness
from ..trace.curate import curate
from ..trace.resolve import INCOMPLETE, RESOLVED, TurnKey, fetch, resolve
from ..trace.values import dumps
from .agent_env import agent_environ, judge_keys, turn_env
from .answer import from_stdout_json
from .canaries import Planted, plant
from .packet_record import (
    AsyncJob,
    FailedFollowup,
    Followup,
    HarnessInfo,
    Packet,
    SandboxInfo,
    TraceBlock,
    load_packet,
    packet_path,
)
from .page import CRASHED, UiObservation
from .privacy import protect_data, protect_packet
from .sandbox import Sandbox
from .slots import UnitSlot
from . import turn_failure
from .trace_snapshot import any_kept, snapshot, write_snapshots
from .turn import TurnResult, fill, run_turn
from .ui import channel_for


def _trace_block(backend: Backend, config: TargetConfig, key: TurnKey, *, turn_failed: bool = False,
                 on_trace: Callable[[dict, list[dict], bool], None] | None = None,
                 project_seen: Callable[[], bool] | None = None) -> TraceBlock:
    """Resolve and curate the trace of one turn; failures become a status, never an exception.

    The trace of a turn that failed (``turn_failed``) is looked for once (or for
    ``failed_turn_deadline_s``): a target that never started its work has none to wait for.
    ``project_seen``: whether the run kept a trace of the project before (a project missing now was deleted).
    """
    deadline = config.backend.failed_turn_deadline_s if turn_failed else None
    try:
        res = resolve(backend, config, key, deadline_s=deadline, project_seen=project_seen)
        found_at = iso(utc_now())
    except Interrupted:
        raise
    except Exception as exc:  # noqa: BLE001 - a harness fault is recorded, not raised
        return TraceBlock("harness_error", message=f"{type(exc).__name__}: {exc}"[:500])
    block = TraceBlock(res.status, trace_id=res.trace_id, method=res.method, candidates=res.candidates,
                       attempts=res.attempts, resolve_ms=res.elapsed_ms, message=res.message,
                       url=backend.trace_url(res.trace_id) if res.trace_id else None)
    if res.status != RESOLVED:
        return block
    try:
        fetched = fetch(backend, res.trace_id, found=res.trace, settle=settle_s(config.backend.settle_s, backend))
    except Exception as exc:  # noqa: BLE001
        if freshness.is_gone(exc):  # found by the search a moment ago
            block.status, block.message = freshness.DELETED, freshness.gone_message(backend, res.trace_id, found_at)
            return block
        block.status = "opik_unreachable" if is_unreachable_error(exc) else "harness_error"
        block.message = f"reading the trace failed: {type(exc).__name__}: {exc}"[:500]
        return block
    block.read_at, block.content_sha256 = iso(utc_now()), freshness.content_sha256(fetched.trace, fetched.spans)
    curated = curate(fetched.trace, fetched.spans, config.vocabulary, complete=fetched.complete)
    if on_trace is not None:
        on_trace(fetched.trace, fetched.spans, fetched.complete)
    block.curated, block.digest = curated.text, curated.digest
    pointer = config.target.answer_pointer
    if pointer is not None:
        value = jsonptr.resolve(fetched.trace.get("output"), pointer)
        block.answer = "" if value is jsonptr.MISSING or value is None else dumps(value).strip()
    block.fetch_ms, block.complete = fetched.waited_ms, fetched.complete
    allowance = freshness.allowance_s(config.backend.flush_timeout_s, config.backend.clock_skew_s)
    late = freshness.late_writes(fetched.trace, fetched.spans, key.ended_at, allowance)
    if late:  # the harness read it while later turns ran: a write after this turn's end is not its evidence
        block.status, block.message = freshness.CHANGED, freshness.describe_late(res.trace_id, late, key.ended_at,
                                                                                 allowance)
    elif not fetched.complete:
        block.status, block.message = INCOMPLETE, "the trace or some of its spans never ended"
    return block


def _one_turn(config: TargetConfig, backend: Backend, box: Sandbox, query: str, session: str,
              case: Case, channel: str, extra_env: dict[str, str] | None,
              slot: UnitSlot, on_trace=None, project_seen=None) -> tuple[TurnResult, TraceBlock, UiObservation | None]:
    """One turn and its trace; the turn itself runs in one of the run's slots (``slot``).

    ``on_trace`` receives the resolved trace and its spans (for the run's own trace page).
    """
    tag = f"e2e-{uuid.uuid4().hex}"
    if channel == "ui":
        return _one_ui_turn(config, backend, query, session, case.timeout_s, slot, on_trace, project_seen)
    argv = fill(config.target.command, {"query": query, "session": session})
    env = box.env()
    env.update(case.env)
    env.update(extra_env or {})
    if config.correlation.env_var:
        env[config.correlation.env_var] = tag
    minted = backend.turn_key(session, tag)  # the local store: this turn writes with a key of its own
    env.update(turn_env(env, minted and minted.key))
    timeout_s = case.timeout_s or config.target.timeout_s
    try:
        with slot.asking(query):
            turn = run_turn(argv, env=env, cwd=box.workdir, timeout_s=timeout_s,
                            kill_grace_s=config.target.kill_grace_s,
                            stderr_tail_bytes=config.target.stderr_tail_bytes,
                            mark=box.next_mark(), under=box.folder, on_swept=box.turn_swept, jail=box.jail())
    except NotReady as exc:
        raise NotReady(f"{config.where('target', 'command')}: field /target/command: {exc}") from None
    turn.correlation_tag = tag
    turn.timeout_s, turn.env = timeout_s, dict(case.env)
    if turn.timed_out:
        trace = TraceBlock("cli_timeout",
                           message=f"the target did not finish within {timeout_s:g} s and was killed")
    else:
        key = TurnKey(query=query, started_at=turn.started_at, ended_at=turn.ended_at,
                      tag=tag if config.correlation.match in ("tag", "metadata") else None, session=session,
                      writer=minted and minted.writer)
        ok_exit = config.target.refusal_exit_code if case.expect_rejection else 0
        trace = _trace_block(backend, config, key, turn_failed=turn_failure.failed(turn, ok_exit), on_trace=on_trace,
                             project_seen=project_seen)
    return turn, trace, None


def _one_ui_turn(config: TargetConfig, backend: Backend, query: str, session: str,
                 timeout_s: float | None, slot: UnitSlot,
                 on_trace=None, project_seen=None) -> tuple[TurnResult, TraceBlock, UiObservation]:
    """Ask through the web UI within the case's timeout (else ui.timeout_s); the trace is found by the
    tag the page passed on. A question whose browser crashed is asked once more, with a new tag; a
    second crash is the unit's upstream outage."""
    channel = channel_for(config, backend)
    for attempt in (1, 2):
        tag = f"e2e-{uuid.uuid4().hex}"
        with slot.asking(query):
            turn, obs = channel.ask(query, session, tag, timeout_s)
        obs.attempts = attempt
        if obs.browser != CRASHED:
            break
    if obs.browser == CRASHED:
        obs.outage = True
        obs.outage_reason = f"the browser crashed while this question was asked, twice ({obs.outage_reason})"
        return turn, TraceBlock("not_sent", message=f"the answer was not observed: {obs.outage_reason}"), obs
    if obs.state == "not_loaded":
        # The question never left the browser: there is no trace to look for.
        trace = TraceBlock("not_sent", message=f"the question was not sent: {obs.outage_reason or 'the page did not load'}")
    else:
        key = TurnKey(query=query, started_at=turn.started_at, ended_at=turn.ended_at,
                      tag=tag if config.correlation.match in ("tag", "metadata") else None, session=session)
        trace = _trace_block(backend, config, key, on_trace=on_trace, project_seen=project_seen)
    return turn, trace, obs


def parse_job(config: TargetConfig, text: str) -> tuple[str | None, float | None]:
    job = config.async_jobs.job_id_pattern.search(text or "")
    eta = config.async_jobs.eta_pattern.search(text or "")
    return (job.group(1) if job else None, float(eta.group(1)) if eta else None)


def wait_seconds(config: TargetConfig, eta: float | None) -> float:
    a = config.async_jobs
    return min((eta or 0.0) + a.margin_s, a.cap_s)


def drive(config: TargetConfig, run_dir: Path, meta: RunMeta, unit: Unit, *,
          backend: Backend | None = None) -> tuple[Packet, bool]:
    """Drive ``unit`` unless its packet exists; returns (packet, created).

    Without ``backend`` it is connected here, and the SDK is imported while the target runs.
    """
    run_dir = Path(run_dir)
    path = packet_path(run_dir, unit.id)
    if path.exists():
        return load_packet(run_dir, unit.id), False
    if backend is None:
        backend = connect(config)
        warm_up(backend)
    return store_packet(run_dir, unit.id, build_packet(config, backend, run_dir, meta, unit))


def store_packet(run_dir: Path, unit_id: str, data: dict, *, sync_dir: bool = True) -> tuple[Packet, bool]:
    """Write a built packet (its JSON form) once; returns (the stored packet, created).

    ``sync_dir=False`` leaves the directory fsync to a file written next in the same
    directory (the packet's content is fsynced before its name appears either way).
    """
    path = packet_path(run_dir, unit_id)
    text = dumps_json(data)
    if not write_once(path, text, sync_dir=sync_dir):
        # A concurrent writer produced the same unit first; the stored packet is the one.
        return load_packet(run_dir, unit_id), False
    return Packet.from_json(json.loads(text), source=str(path)), True


def build_packet(config: TargetConfig, backend: Backend, run_dir: Path, meta: RunMeta, unit: Unit, *,
                 defer_removal: bool = False, slot: UnitSlot | None = None) -> dict:
    """Drive the unit's turn(s) in a sandbox; the packet's JSON form, redacted and (korpus) pseudonymised.

    ``defer_removal``: the restored sandbox is deleted later by ``sandbox.remove_finished``.
    ``slot``: the unit's share of the run's turn slots (see drive.slots); time spent waiting
    for one is left out of the unit's wall time.
    """
    slot = slot or UnitSlot()
    spec = config.sandbox
    try:
        with slot.asking(unit.case.query) if spec.enabled and (spec.snapshot or spec.restore) else nullcontext():
            return _build_packet(config, backend, run_dir, meta, unit, defer_removal, slot)
    finally:
        slot.close()  # a unit that never took a turn lets the next one go


def _build_packet(config: TargetConfig, backend: Backend, run_dir: Path, meta: RunMeta, unit: Unit,
                  defer_removal: bool, slot: UnitSlot) -> dict:
    case = unit.case
    started = utc_now()
    t0 = time.monotonic()
    run_token = meta.run_id.replace("/", "-")
    session = f"e2e-{run_token}-{unit.id}-{uuid.uuid4().hex[:8]}"
    base_env = agent_environ(config, os.environ, backend.sdk_env)
    secrets = [*config.redact_patterns, *judge_keys()]
    redactor = Redactor({**os.environ, **config.target.env, **backend.sdk_env, **case.env}, secrets)
    token = f"{run_token}-{unit.id}-{uuid.uuid4().hex[:6]}"
    packet = Packet(unit_id=unit.id, case_id=case.id, run_id=meta.run_id, repeat=unit.repeat,
                    case=case.to_json(), session=session, channel=unit.channel,
                    trace=TraceBlock("harness_error", message="the turn did not start"))
    target_ms = 0
    planted = Planted()
    traces: list[dict] = []  # each resolved turn's trace, for the run's own trace pages

    def seen() -> bool:  # the run kept a trace before: its project existed during this run
        return bool(traces) or any_kept(run_dir)
    with Sandbox(config, token, base_env, defer_removal=defer_removal, protect=(Path(run_dir),)) as box:
        try:
            if case.adversarial and config.canaries:
                planted = (channel_for(config, backend).planted if unit.channel == "ui"
                           else plant(config.canaries, box.dir))
                redactor = Redactor({**os.environ, **config.target.env, **backend.sdk_env, **case.env,
                                     **planted.env}, secrets)
            packet.turn, packet.trace, packet.ui = _one_turn(config, backend, box, case.query, session, case,
                                                             unit.channel, planted.env, slot,
                                                             on_trace=_keep(traces, "initial"), project_seen=seen)
            packet.answer = answer_of(config, packet.turn, packet.trace)
            target_ms += packet.turn.wall_ms
            if case.expect_async_job and not packet.turn.timed_out:
                target_ms += _follow_job(config, backend, box, session, packet, case, planted.env, slot,
                                         _keep(traces, "followup"), seen)
        except ObaiError:
            raise
        except Exception as exc:  # noqa: BLE001 - kept apart from the target's own faults
            # The verdict of a unit with a harness error is inconclusive whatever its trace says.
            packet.harness.error = f"{type(exc).__name__}: {exc}"[:500]
    packet.sandbox = SandboxInfo(enabled=config.sandbox.enabled, restore_error=box.restore_error)
    for turn in _turns(packet):
        turn.env = redactor.env(turn.env, config.redact_patterns)
    if planted.canaries:
        # Scanned before redaction, which would mask a leaked secret-named variable.
        packet.canaries = planted.scan({"answer": packet.answer,
                                        "followup_answer": packet.followup.answer if packet.followup else ""})
    wall_ms = int((time.monotonic() - t0 - slot.queued_s) * 1000)
    waited_ms = int(packet.async_job.wait_s * 1000) if packet.async_job else 0
    packet.harness = HarnessInfo(version=__version__, started_at=iso(started), ended_at=iso(utc_now()),
                                 wall_ms=wall_ms, target_ms=target_ms, waited_ms=waited_ms,
                                 overhead_ms=max(0, wall_ms - target_ms - waited_ms), error=packet.harness.error)
    data = redactor.data(packet.to_json())
    kept = write_snapshots(run_dir, unit.id, protect_data(redactor.data(traces), case, config, run_dir=run_dir))
    if kept is not None:
        data["evidence"] = kept.to_json()  # the packet binds the kept trace: what the judgment read
    return protect_packet(data, case, config, run_dir=run_dir)


def _keep(traces: list[dict], role: str) -> Callable[[dict, list[dict], bool], None]:
    return lambda trace, spans, complete: traces.append(snapshot(role, trace, spans, complete))


def _turns(packet: Packet) -> list[TurnResult]:
    out = [packet.turn]
    if packet.followup is not None:
        out.append(packet.followup.turn)
    if packet.async_job is not None and packet.async_job.failed_followup is not None:
        out.append(packet.async_job.failed_followup.turn)
    return out


def answer_of(config: TargetConfig, turn: TurnResult, trace: TraceBlock) -> str:
    """The final answer of a turn, where target.answer_from says it is (answer.py)."""
    t = config.target
    if t.stdout_pointer is not None:
        return from_stdout_json(turn.stdout, t.stdout_pointer)
    if t.answer_pointer is None:
        return (turn.stdout or "").strip()
    return trace.answer or ""


def _follow_job(config: TargetConfig, backend: Backend, box: Sandbox, session: str, packet: Packet,
                case: Case, extra_env: dict[str, str] | None, slot: UnitSlot, on_trace=None,
                project_seen=None) -> int:
    """Wait for the announced job and ask for its result in the same session; the follow-up's wall time."""
    job_id, eta = parse_job(config, packet.answer)
    if job_id is None:
        packet.followup_error = "no job id in the first answer, so no follow-up was sent"
        return 0
    packet.async_job = AsyncJob(job_id=job_id, eta_s=eta, wait_s=wait_seconds(config, eta))
    if STOPPING.wait(packet.async_job.wait_s):
        raise Interrupted("the run was stopped while waiting for an async job")
    query = config.async_jobs.followup_query.replace("{job_id}", job_id)
    f_turn, f_trace, f_ui = _one_turn(config, backend, box, query, session, case, packet.channel, extra_env, slot,
                                      on_trace=on_trace, project_seen=project_seen)
    if f_turn.timed_out or (f_turn.exit_code is not None and f_turn.exit_code != 0) or (
            f_ui is not None and f_ui.state != "done"):
        how = "timed out" if f_turn.timed_out else f"exited {f_turn.exit_code}"
        packet.followup_error = f"the follow-up turn {how}: {f_turn.stderr_tail.strip()[-300:]}"
        packet.async_job.failed_followup = FailedFollowup(turn=f_turn, trace=f_trace)
    else:
        packet.followup = Followup(query=query, turn=f_turn, answer=answer_of(config, f_turn, f_trace),
                                   trace=f_trace, ui=f_ui)
    return f_turn.wall_ms
