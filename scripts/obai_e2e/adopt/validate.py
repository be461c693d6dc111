"""Checking a draft on the traces it was written from: each trace resolved as a run would find
it, curated with the draft's vocabulary and judged against its starter case.

What comes out per trace: whether the draft's correlation finds exactly that trace, the
verdict and reasons the rubric gives, and what the vocabulary left unread (a tool span
that is no specialist, a guardrail decision in neither list, no answer).
"""
from __future__ import annotations

from ..base import jsonptr
from ..config.cases import Case
from ..config.target import TargetConfig
from ..drive.packet_record import Packet, TraceBlock
from ..drive.turn import TurnResult
from ..judge.rubric.check import check_packet
from ..trace.backend import Backend
from ..trace.curate import Curated
from ..trace.resolve import RESOLVED, TurnKey, metadata_text, resolve
from ..trace.values import dumps
from .roles import visible
from .sample import Sampled

RESOLVE_DEADLINE_S = 2.0


def answer_in(config: TargetConfig, s: Sampled, curated: Curated) -> str:
    """The answer as the draft reads it; from the trace when the agent's stdout is not at hand."""
    pointer = config.target.answer_pointer
    if pointer is not None:
        value = jsonptr.resolve(s.trace.get("output"), pointer)
        return "" if value is jsonptr.MISSING or value is None else dumps(value).strip()
    return curated.digest.final_response or ""


def resolves(backend: Backend, config: TargetConfig, s: Sampled, query: str) -> dict:
    """Whether the draft's correlation finds this trace, and only it."""
    corr, t = config.correlation, s.trace
    tag = None
    if corr.match == "metadata":
        tag = metadata_text(t.get("metadata"), corr.metadata_key)
    elif corr.match == "tag":
        tag = next(iter(t.get("tags") or []), None)
    key = TurnKey(query=query, started_at=t.get("start_time"), ended_at=t.get("end_time") or t.get("start_time"),
                  tag=tag, session=t.get("thread_id"))
    res = resolve(backend, config, key, deadline_s=RESOLVE_DEADLINE_S)
    ok = res.status == RESOLVED and res.trace_id == t.get("id")
    return {"method": res.method, "status": res.status if not (res.status == RESOLVED and not ok) else "other_trace",
            "ok": ok}


def unread(config: TargetConfig, s: Sampled, curated: Curated, answer_tools: tuple[str, ...] = ()) -> list[str]:
    """What the draft's vocabulary leaves unread in this trace (the answer's own tools are left out on purpose)."""
    v, d, out = config.vocabulary, curated.digest, []
    for span in visible(s):
        if span.get("type") == "tool" and v.specialist_name(span.get("name"), "tool") is None \
                and not v.skill_load.matches(span.get("name")) and not v.guardrail.matches(span.get("name")) \
                and span.get("name") not in answer_tools:
            out.append(f"tool span {span.get('name')!r} is no specialist")
    if d.guardrail is None:
        out.append("no guardrail span")
    elif d.guardrail.allowed is None:
        out.append(f"guardrail decision {d.guardrail.decision!r} is in neither value list")
    for load in d.skill_loads:
        if not load.skill or load.skill == "null":
            out.append(f"skill load {load.span_id} has no name at {v.skill_name_field}")
    return out


def packet_for(config: TargetConfig, case: Case, s: Sampled, curated: Curated, answer: str) -> Packet:
    """The packet a run would have written for this trace's turn (exit code from the guardrail's decision)."""
    refused = curated.digest.guardrail is not None and curated.digest.guardrail.refused
    turn = TurnResult(exit_code=config.target.refusal_exit_code if refused else 0, stdout=answer,
                      started_at=s.trace.get("start_time") or "", ended_at=s.trace.get("end_time") or "")
    return Packet(unit_id=case.id, case_id=case.id, run_id="adopt", case=case.to_json(), turn=turn, answer=answer,
                  trace=TraceBlock(RESOLVED, trace_id=s.id, curated=curated.text, digest=curated.digest,
                                   answer=answer))


def check(backend: Backend | None, config: TargetConfig, cases: dict[str, Case], s: Sampled, curated: Curated,
          case_id: str | None, query: str, answer_tools: tuple[str, ...] = ()) -> dict:
    answer = answer_in(config, s, curated)
    row = {"trace_id": s.id, "case": case_id, "unread": unread(config, s, curated, answer_tools)}
    row["resolution"] = resolves(backend, config, s, query) if backend is not None else None
    case = cases.get(case_id or "")
    if case is None:
        return row
    result = check_packet(packet_for(config, case, s, curated, answer), case, config)
    row.update(verdict=result.verdict, reasons=result.reasons)
    return row
