"""The draft checked against itself before it is written: can it fail the agent at all?

The loaded draft (target.yaml and its starter cases) and the sampled traces go in. Each
answered trace is replayed through the draft and the real rubric twice, changed the way a
broken agent would change it:

* a number that no payload and no question holds is planted in the answer, wherever the
  trace carries the answer (its output, a tool that hands the answer back): the draft must
  flag it (``hub.unverified_number:<n>``, so the unit is not ``pass``);
* the spans of one specialist the case expects are taken out: the draft must fail the case
  (``routing.specialist_missing``).

What comes out: per probe how many traces were checked and which were not flagged, each
with the part of the draft that let it through (the key) and why, as ``undecided`` entries
as well. A draft that no probe could run on is not called sound either.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..config.cases import Case
from ..config.target import TargetConfig
from ..judge.rubric.check import check_packet
from ..judge.rubric.numbers import Pool, extract, payload_texts
from ..judge.rubric.outcome import FAIL
from ..trace.curate import curate
from .answer_tools import holds, norm
from .choices import Findings
from .leaves import nodes
from .sample import Sampled
from .validate import answer_in, packet_for

PLANTS = ("7913.27", "8641.53", "9372.81", "6158.49", "5297.63")
PLANTED = "Analysts see the fair value at {n}."


@dataclass
class Probe:
    """One way of breaking the agent, and the traces it was tried on."""

    name: str
    checked: int = 0
    failed: list[dict] = field(default_factory=list)  # trace, case, part (a key of the draft), why

    def to_json(self) -> dict:
        return {"checked": self.checked, "flagged": self.checked - len(self.failed), "failed": self.failed}


def _replace_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace_strings(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_strings(v, old, new) for k, v in value.items()}
    return value


def _origin(s: Sampled, answer: str) -> str | None:
    """The span the answer's text came from, if a span's output holds it before anyone was handed it: a tool
    whose text the agent passes on as its answer. That text stays as it was; every copy gets the plant."""
    holders = {sp.get("id"): sp for sp in s.spans if holds(sp.get("output"), norm(answer))
               and not holds(sp.get("input"), norm(answer))}
    # a span that only passes on what a span under it returned is no origin
    inner = [sp for sp in holders.values() if not any(h.get("parent_span_id") == sp.get("id") for h in holders.values())]
    if not inner:
        return None
    end = min(sp.get("end_time") or "~" for sp in inner)
    return max((sp for sp in inner if (sp.get("end_time") or "~") == end), key=lambda sp: sp.get("start_time") or "")["id"]


def _plant(s: Sampled, answer: str, sentence: str) -> Sampled:
    """The trace as an agent that added ``sentence`` to its answer ``answer`` would have written it."""
    new, origin = f"{answer} {sentence}", _origin(s, answer)
    trace = {**s.trace, "output": _replace_strings(s.trace.get("output"), answer, new)}
    spans = [{**sp, "input": _replace_strings(sp.get("input"), answer, new),
              "output": sp.get("output") if sp.get("id") == origin else _replace_strings(sp.get("output"), answer, new)}
             for sp in s.spans]
    return Sampled(trace=trace, spans=spans)


def _number(config: TargetConfig, case: Case, s: Sampled) -> str:
    curated = curate(s.trace, s.spans, config.vocabulary)
    pool = Pool([t for c in curated.digest.specialist_calls for t in payload_texts(c.payload_text)] + [case.query])
    return next((n for n in PLANTS if not pool.contains(extract(n)[0])), PLANTS[0])


def _answer(config: TargetConfig, s: Sampled) -> str:
    """The answer as the draft reads it in the trace; when it reads stdout, the trace output's longest text
    (what an agent usually prints)."""
    answer = answer_in(config, s, curate(s.trace, s.spans, config.vocabulary)).strip()
    if answer or config.target.answer_pointer is not None:
        return answer
    return max((v.strip() for _, v in nodes(s.trace.get("output"), "/output") if isinstance(v, str)), key=len,
               default="")


def planted(config: TargetConfig, case: Case, s: Sampled, probe: Probe) -> None:
    """Plant a number in the answer; the draft must flag it."""
    answer = _answer(config, s)
    if not answer:
        probe.failed.append({"trace": s.id, "case": case.id, "part": "target.answer_from",
                             "why": "the draft reads no answer in this trace, so no number in it can be checked"})
        return
    number = _number(config, case, s)
    changed = _plant(s, answer, PLANTED.format(n=number))
    curated = curate(changed.trace, changed.spans, config.vocabulary)
    read = answer_in(config, changed, curated)
    if number not in read:  # the answer is not where the draft reads the trace: it came from stdout
        read = f"{answer} {PLANTED.format(n=number)}"
    result = check_packet(packet_for(config, case, changed, curated, read), case, config)
    code = f"hub.unverified_number:{number}"
    if result.verdict != "pass" and any(code in o.tripped_codes for o in result.outcomes):
        return
    holders = [c.name for c in curated.digest.specialist_calls if number in c.payload_text]
    why = (f"the planted number {number} is in the payload of {', '.join(dict.fromkeys(holders))}: its output holds "
           "the answer, so it grounds every number in it" if holders else
           f"the planted number {number} was not flagged ({result.verdict}, {', '.join(result.reasons) or 'no code'})")
    probe.failed.append({"trace": s.id, "case": case.id, "why": why,
                         "part": "vocabulary.specialists" if holders else "rubric"})


def _without(s: Sampled, config: TargetConfig, tool: str) -> Sampled:
    """The trace without the spans of specialist ``tool`` (and the spans under them)."""
    v = config.vocabulary
    gone = {sp.get("id") for sp in s.spans if v.specialist_name(sp.get("name"), sp.get("type")) == tool}
    for _ in range(len(s.spans)):
        more = {sp.get("id") for sp in s.spans if sp.get("parent_span_id") in gone} - gone
        if not more:
            break
        gone |= more
    return Sampled(trace=copy.deepcopy(s.trace), spans=[sp for sp in s.spans if sp.get("id") not in gone])


def removed(config: TargetConfig, case: Case, s: Sampled, probe: Probe) -> None:
    """Take out the spans of the first specialist the case expects; the draft must fail the case."""
    tool = case.expected_tools[0]
    changed = _without(s, config, tool)
    curated = curate(changed.trace, changed.spans, config.vocabulary)
    result = check_packet(packet_for(config, case, changed, curated, answer_in(config, changed, curated)), case,
                          config)
    if any(o.rule == "routing.specialist_missing" and o.status == FAIL for o in result.outcomes):
        return
    left = [c.span_name or c.name for c in curated.digest.specialist_calls if c.name == tool]
    probe.failed.append({"trace": s.id, "case": case.id, "part": "vocabulary.specialists",
                         "why": f"with the spans of {tool} taken out, routing.specialist_missing did not trip"
                                + (f" (the draft still reads {tool} in span(s) {', '.join(left)})" if left else "")})


def self_check(config: TargetConfig, cases: dict[str, Case], samples: list[Sampled], by_trace: dict[str, str],
               f: Findings) -> dict:
    """Both probes on every sampled trace whose starter case expects an answer; failures also go to ``f``."""
    number, specialist = Probe("planted_number"), Probe("specialist_removed")
    for s in samples:
        case = cases.get(by_trace.get(s.id, ""))
        if case is None or case.expect_rejection:
            continue
        number.checked += 1
        planted(config, case, s, number)
        if case.expected_tools:
            specialist.checked += 1
            removed(config, case, s, specialist)
    for probe, what in ((number, "a number planted in the answer"), (specialist, "a specialist taken out")):
        if not probe.checked:
            f.leave("self_check", f"the draft was not tried with {what}: no sampled trace has a case that "
                    + ("expects an answer" if probe is number else "expects a specialist"),
                    "sample a trace of an answered question that calls a tool, and adopt again")
        for fail in probe.failed[:3]:
            f.leave(fail["part"], f"the draft's own check, {what} (trace {fail['trace'][:13]}, case {fail['case']}): "
                    f"{fail['why']}", "fix that part of target.yaml, then adopt again (or check the edit with "
                    "traces sample --target)")
    ok = bool(number.checked and specialist.checked and not number.failed and not specialist.failed)
    return {"ok": ok, number.name: number.to_json(), specialist.name: specialist.to_json()}
