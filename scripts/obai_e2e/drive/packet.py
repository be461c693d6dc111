"""Driving one unit end to end: turn(s) → trace → curated trace → the packet on disk.

The packet ``<run_dir>/<unit>.json`` is written once, atomically; when it exists the
unit is not driven again and the stored packet is returned as it is.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from .. import __version__
from ..trace.backend import Backend, connect, warm_up
from ..base.clock import iso, utc_now
from ..trace.curate import curate
from ..base.errors import ObaiError
from ..base.fsutil import write_once_json
from .privacy import protect_packet
from ..base.redact import Redactor
from ..trace.resolve import INCOMPLETE, RESOLVED, TurnKey, fetch, resolve
from ..rundir.layout import load_run
from .sandbox import Sandbox
from .turn import fill, run_turn
from ..config.units import Unit, check_unit_id, resolve_unit

PACKET_SCHEMA_VERSION = 1


def packet_path(run_dir: Path, unit_id: str) -> Path:
    return Path(run_dir) / f"{check_unit_id(unit_id)}.json"


def load_packet(run_dir: Path, unit_id: str) -> dict | None:
    path = packet_path(run_dir, unit_id)
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _trace_block(backend: Backend, config, key: TurnKey) -> dict:
    """Resolve and curate the trace of one turn; failures become a status, never an exception."""
    try:
        res = resolve(backend, config, key)
    except Exception as exc:  # noqa: BLE001 - a harness fault is recorded, not raised
        return {"status": "harness_error", "message": f"{type(exc).__name__}: {exc}"[:500], "trace_id": None}
    block = {"status": res.status, "method": res.method, "trace_id": res.trace_id,
             "candidates": res.candidates, "attempts": res.attempts, "resolve_ms": res.elapsed_ms,
             "message": res.message}
    if res.status != RESOLVED:
        return block
    try:
        fetched = fetch(backend, res.trace_id)
    except Exception as exc:  # noqa: BLE001
        from ..trace.backend import is_unreachable_error

        status = "opik_unreachable" if is_unreachable_error(exc) else "harness_error"
        block.update(status=status, message=f"reading the trace failed: {type(exc).__name__}: {exc}"[:500])
        return block
    curated = curate(fetched.trace, fetched.spans, config.vocabulary, complete=fetched.complete)
    block.update(curated=curated.text, digest=curated.digest, fetch_ms=fetched.waited_ms,
                 complete=fetched.complete)
    if not fetched.complete:
        block.update(status=INCOMPLETE, message="the trace or some of its spans never ended")
    return block


def _one_turn(config, backend, box: Sandbox, query: str, session: str) -> tuple[dict, dict]:
    tag = f"e2e-{uuid.uuid4().hex}"
    argv = fill(config.target.command, {"query": query, "session": session})
    env = box.env()
    env[config.correlation.env_var] = tag
    turn = run_turn(argv, env=env, cwd=box.workdir, timeout_s=config.target.timeout_s,
                    kill_grace_s=config.target.kill_grace_s,
                    stderr_tail_bytes=config.target.stderr_tail_bytes)
    if turn.timed_out:
        trace = {"status": "cli_timeout", "trace_id": None,
                 "message": f"the target did not finish within {config.target.timeout_s:g} s and was killed"}
    else:
        key = TurnKey(query=query, started_at=turn.started_at, ended_at=turn.ended_at,
                      tag=tag if config.correlation.match != "none" else None)
        trace = _trace_block(backend, config, key)
    t = turn.to_json()
    t["correlation_tag"] = tag
    return t, trace


def parse_job(config, text: str) -> tuple[str | None, float | None]:
    job = config.async_jobs.job_id_pattern.search(text or "")
    eta = config.async_jobs.eta_pattern.search(text or "")
    return (job.group(1) if job else None, float(eta.group(1)) if eta else None)


def wait_seconds(config, eta: float | None) -> float:
    a = config.async_jobs
    return min((eta or 0.0) + a.margin_s, a.cap_s)


def drive(config, case_set, run_dir: Path, unit_id: str, *, backend: Backend | None = None) -> tuple[dict, bool]:
    """Drive ``unit_id`` unless its packet exists; returns (packet, created)."""
    run_dir = Path(run_dir)
    path = packet_path(run_dir, unit_id)
    meta = load_run(run_dir)
    unit = resolve_unit(case_set, unit_id, meta)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8")), False
    backend = backend or connect(config)
    warm_up(backend)
    packet = build_packet(config, backend, run_dir, meta, unit)
    created = write_once_json(path, packet)
    if not created:  # a concurrent writer produced the same unit first; keep theirs
        packet = json.loads(path.read_text(encoding="utf-8"))
    return packet, created


def build_packet(config, backend: Backend, run_dir: Path, meta: dict, unit: Unit) -> dict:
    case = unit.case
    started = utc_now()
    t0 = time.monotonic()
    session = f"e2e-{meta['run_id'].replace('/', '-')}-{unit.id}-{uuid.uuid4().hex[:8]}"
    base_env = {**os.environ, **config.target.env, **backend.sdk_env}
    redactor = Redactor({**os.environ, **config.target.env}, config.redact_patterns)
    token = f"{meta['run_id'].replace('/', '-')}-{unit.id}-{uuid.uuid4().hex[:6]}"
    async_info = followup = followup_error = None
    target_ms = 0
    harness_error = None
    turn: dict = {"timed_out": False, "exit_code": None, "stdout": "", "stderr_tail": "", "wall_ms": 0}
    trace: dict = {"status": "harness_error", "trace_id": None, "message": "the turn did not start"}
    with Sandbox(config, token, base_env) as box:
        try:
            turn, trace = _one_turn(config, backend, box, case.query, session)
            target_ms += turn["wall_ms"]
            if case.expect_async_job and not turn["timed_out"]:
                job_id, eta = parse_job(config, turn["stdout"])
                if job_id is None:
                    followup_error = "no job id in the first answer, so no follow-up was sent"
                else:
                    wait = wait_seconds(config, eta)
                    async_info = {"job_id": job_id, "eta_s": eta, "wait_s": wait}
                    time.sleep(wait)
                    query = config.async_jobs.followup_query.replace("{job_id}", job_id)
                    f_turn, f_trace = _one_turn(config, backend, box, query, session)
                    target_ms += f_turn["wall_ms"]
                    if f_turn["timed_out"] or f_turn["exit_code"] != 0:
                        followup_error = (f"the follow-up turn {'timed out' if f_turn['timed_out'] else 'exited ' + str(f_turn['exit_code'])}: "
                                          f"{f_turn['stderr_tail'].strip()[-300:]}")
                        async_info["failed_followup"] = {"turn": f_turn, "trace": f_trace}
                    else:
                        followup = {"query": query, "turn": f_turn, "answer": f_turn["stdout"].strip(),
                                    "trace": f_trace}
        except ObaiError:
            raise
        except Exception as exc:  # noqa: BLE001 - kept apart from the target's own faults
            harness_error = f"{type(exc).__name__}: {exc}"[:500]
            # The verdict of a unit with a harness error is inconclusive whatever its trace says.
        restore_error = box.restore_error
    wall_ms = int((time.monotonic() - t0) * 1000)
    waited_ms = int(async_info["wait_s"] * 1000) if async_info else 0
    packet = {
        "schema_version": PACKET_SCHEMA_VERSION,
        "unit_id": unit.id,
        "case_id": case.id,
        "repeat": unit.repeat,
        "run_id": meta["run_id"],
        "case": case.to_json(),
        "session": session,
        "turn": turn,
        "answer": (turn.get("stdout") or "").strip(),
        "trace": trace,
        "async": async_info,
        "followup": followup,
        "followup_error": followup_error,
        "sandbox": {"enabled": config.sandbox.enabled, "restore_error": restore_error},
        "harness": {
            "version": __version__,
            "started_at": iso(started),
            "ended_at": iso(utc_now()),
            "wall_ms": wall_ms,
            "target_ms": target_ms,
            "waited_ms": waited_ms,
            "overhead_ms": max(0, wall_ms - target_ms - waited_ms),
            "error": harness_error,
        },
    }
    packet = redactor.data(packet)
    return protect_packet(packet, case, config, run_dir=run_dir)

