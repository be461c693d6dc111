"""How a turn will be tied to its trace, suggested from what the traces carry.

A thread id per turn (what Opik's integrations record) needs nothing from the agent but
the ``{session}`` the command passes; a metadata value or a tag that differs per trace
needs the variable the agent copies it from; without either, the time window and the
query (``match: none``) are left.
"""
from __future__ import annotations

from collections import Counter

from .choices import Findings
from .sample import Sampled

ID_HINTS = ("ref", "run", "tag", "correlation", "request", "trace")


def suggest(samples: list[Sampled], f: Findings, command: list[str] | None) -> None:
    threads = [s.trace.get("thread_id") for s in samples]
    with_session = command is None or any("{session}" in part for part in command)
    if all(threads) and len(set(threads)) == len(threads) and with_session:
        f.choose("correlation.match", "thread", f"the traces: each has a thread_id of its own ({threads[0]} in "
                 f"trace {samples[0].short()}), and the harness passes a fresh {{session}} per unit")
        if command is None:
            f.leave("target.command", "the traces do not show how the agent is started",
                    "write target.command (an argv with {query}, and {session} where the thread id goes)")
        return
    if all(threads) and not with_session:
        f.leave("correlation.match", "the traces carry a thread_id, but the command passes no {session}",
                "pass {session} where the agent takes its conversation or thread id, then use match: thread")
    key = _unique_metadata(samples)
    if key:
        f.choose("correlation.match", "metadata", f"the traces: metadata.{key} differs in each")
        f.choose("correlation.metadata_key", key, f"metadata of trace {samples[0].short()}")
        f.leave("correlation.env_var", f"the traces do not show which variable the agent copies into metadata.{key}",
                "name it in correlation.env_var (the harness puts a fresh value there for every turn)")
        f.choose("correlation.env_var", "AGENT_RUN_REF", "a placeholder: see the undecided list")
        return
    tags = Counter(t for s in samples for t in (s.trace.get("tags") or []))
    unique = [s for s in samples if any(tags[t] == 1 for t in (s.trace.get("tags") or []))]
    if len(samples) > 1 and len(unique) == len(samples):
        f.choose("correlation.match", "tag", "the traces: each carries a tag of its own")
        f.leave("correlation.env_var", "the traces do not show which variable the agent reads its tag from",
                "name it in correlation.env_var")
        f.choose("correlation.env_var", "AGENT_TRACE_TAG", "a placeholder: see the undecided list")
        return
    f.choose("correlation.match", "none", "the traces: no thread id, metadata value or tag tells them apart, so "
             "the time window and the query do")
    f.leave("correlation.match", "window correlation: two units with the same query never run at once, and a "
            "trace written twice is a multi_match", "record the {session} as the trace's thread_id (or a tag) in "
            "the agent, then adopt again")


def _unique_metadata(samples: list[Sampled]) -> str | None:
    if len(samples) < 2:
        return None
    keys = None
    for s in samples:
        meta = s.trace.get("metadata") if isinstance(s.trace.get("metadata"), dict) else {}
        scalar = {k for k, v in meta.items() if isinstance(v, str) and v}
        keys = scalar if keys is None else keys & scalar
    for key in sorted(keys or (), key=lambda k: (not any(h in k.lower() for h in ID_HINTS), k)):
        values = [s.trace["metadata"][key] for s in samples]
        if len(set(values)) == len(values) and any(h in key.lower() for h in ID_HINTS):
            return key
    return None
