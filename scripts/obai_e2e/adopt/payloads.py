"""Where the parts of a turn sit inside the spans: the guardrail's decision, a specialist's
text and error shape, the question and the answer in the trace.

Every location is a JSON pointer from the span (or trace) as ``traces sample --json``
prints it, chosen from the values the sampled traces actually carry.
"""
from __future__ import annotations

from typing import Any

from .choices import Findings
from .leaves import common, last_key, leaves, nodes, not_text, reads_as_text
from .roles import Roles, visible, where
from .sample import Sampled

DECISION_KEYS = ("allowed", "allow", "decision", "verdict", "action", "outcome", "passed", "pass", "approved",
                 "blocked", "flagged", "safe", "triggered", "tripwire_triggered", "status", "result")
TEXT_KEYS = ("text", "body", "content", "result", "answer", "message", "output", "summary")
ANSWER_KEYS = ("answer", "response", "reply", "text", "final", "result", "output", "content")
QUERY_KEYS = ("question", "query", "message", "prompt", "input", "text", "content")
DATA_KEYS = ("structuredcontent", "figures", "data", "structured", "payload")
STATUS_KEYS = ("status", "state", "outcome")
DETAIL_KEYS = ("detail", "error", "message", "reason")
FAILED = ("error", "failed", "failure", "fail")
# The refused value that usually pairs with an allowed one, for a draft that saw no refusal.
OPPOSITE = {"pass": "block", "allow": "deny", "allowed": "blocked", "ok": "blocked", "yes": "no", "approve": "reject",
            "approved": "rejected", "safe": "unsafe", "accept": "reject", "on_topic": "off_topic"}


def _rank(pointer: str, keys: tuple[str, ...]) -> int:
    return keys.index(last_key(pointer)) if last_key(pointer) in keys else len(keys)


def answered(s: Sampled, roles: Roles) -> bool:
    """The turn went past the guardrail: a skill was loaded, a specialist called or the answer's tool ran."""
    return any(roles.is_specialist(sp) or roles.is_skill(sp) or sp.get("name") in roles.answer_tools
               for sp in visible(s))


def refused(s: Sampled, f: Findings, roles: Roles) -> bool:
    """The trace's guardrail decision is one the draft reads as a refusal."""
    pointer, values = f.get("vocabulary.guardrail_allowed_field"), f.get("vocabulary.guardrail_refused_values") or []
    if pointer is None:
        return False
    for sp in visible(s):
        if sp.get("name") == roles.guardrail:
            value = decision_leaves(sp).get(pointer)
            return any(value == v and type(value) is type(v) for v in values)
    return False


def decision_leaves(span: dict) -> dict[str, Any]:
    """The values a guardrail's decision can be: its output's, then its metadata's (the OpenAI Agents SDK
    records a guardrail with no output and ``triggered`` in its metadata)."""
    return {**dict(leaves(span.get("output"), "/output")), **dict(leaves(span.get("metadata"), "/metadata"))}


def find_decision(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    pairs = [(sp, s) for s in samples for sp in visible(s) if sp.get("name") == roles.guardrail]
    if not pairs:
        return
    docs = [{p: v for p, v in decision_leaves(sp).items()
             if isinstance(v, bool) or (isinstance(v, str) and 0 < len(v) <= 24 and " " not in v)} for sp, _ in pairs]
    found = sorted(common(docs), key=lambda p: (_rank(p, DECISION_KEYS), -len({repr(d[p]) for d in docs})))
    if not found:
        f.leave("vocabulary.guardrail_allowed_field", f"no yes/no or short word in the output of {roles.guardrail!r}",
                "point guardrail_allowed_field at the span's decision (see traces sample --json)")
        return
    pointer = found[0]
    f.choose("vocabulary.guardrail_allowed_field", pointer, where(*pairs[0], pointer))
    allowed = list(dict.fromkeys(d[pointer] for d, (_, s) in zip(docs, pairs) if answered(s, roles)))
    refused = list(dict.fromkeys(d[pointer] for d, (_, s) in zip(docs, pairs)
                                 if not answered(s, roles) and d[pointer] not in allowed))
    if allowed:
        f.choose("vocabulary.guardrail_allowed_values", allowed, "the decision in the answered traces")
    if refused:
        f.choose("vocabulary.guardrail_refused_values", refused, "the decision in the refused traces")
    if not refused and allowed:
        guess = [not allowed[0]] if isinstance(allowed[0], bool) else \
            [OPPOSITE.get(str(allowed[0]).lower(), f"not-{allowed[0]}")]
        f.choose("vocabulary.guardrail_refused_values", guess, "a guess: no refused turn among the traces")
        f.leave("vocabulary.guardrail_refused_values", "no trace of a refused question, so the refused value is a "
                f"guess ({guess[0]!r})", "ask the agent an off-topic question once and adopt again")
    if not allowed:
        f.leave("vocabulary.guardrail_allowed_values", "no trace of an answered question",
                "ask the agent a question it answers and adopt again")


def _mcp(output: Any) -> bool:
    return isinstance(output, dict) and isinstance(output.get("content"), list) and \
        all(isinstance(b, dict) and "type" in b for b in output["content"])


def _failed(doc: dict) -> bool:
    return any(last_key(p) in STATUS_KEYS and str(v).lower() in FAILED for p, v in doc.items())


def find_specialist_output(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    pairs = [(sp, s) for s in samples for sp in visible(s) if roles.is_specialist(sp) and sp.get("output") is not None]
    if not pairs:
        return
    if all(_mcp(sp["output"]) for sp, _ in pairs):
        f.choose("vocabulary.specialist_output", None, where(*pairs[0]) + ": an MCP envelope (content blocks, "
                 "structuredContent, isError), which the harness reads without pointers")
        return
    docs = [dict(leaves(sp["output"], "/output")) for sp, _ in pairs]
    trees = [dict(nodes(sp["output"], "/output")) for sp, _ in pairs]
    # The text is read from calls that worked: a failed call may carry only its error.
    worked = [i for i, d in enumerate(docs) if not _failed(d)] or list(range(len(docs)))
    text = _text_pointer([trees[i] for i in worked], [pairs[i] for i in worked], f)
    _data_pointer(trees, pairs, text, f)
    _error_shape(docs, pairs, text.rsplit("/", 1)[0] if text else "/output", f)


def _text_pointer(trees: list[dict], pairs: list, f: Findings) -> str | None:
    """The pointer of a tool's text: a string in every call that worked (or, where a tool returns data, the
    value that is text in some calls and a JSON document in others), never a MIME type or an id."""
    found = common(trees)
    plain = [p for p in found if all(not_text(t[p]) is None for t in trees) and any(reads_as_text(t[p]) for t in trees)]
    if plain:
        plain.sort(key=lambda p: (_rank(p, TEXT_KEYS), -sum(len(t[p]) for t in trees)))
        f.choose("vocabulary.specialist_output.text", plain[0], where(*pairs[0], plain[0]))
        return plain[0]
    mixed = [p for p in found if any(reads_as_text(t[p]) for t in trees)
             and all(isinstance(t[p], (dict, list)) or not_text(t[p]) is None for t in trees)]
    if mixed:
        mixed.sort(key=lambda p: (_rank(p, TEXT_KEYS), -p.count("/")))
        n = sum(isinstance(t[mixed[0]], (dict, list)) for t in trees)
        f.choose("vocabulary.specialist_output.text", mixed[0], where(*pairs[0], mixed[0]) + f": text in "
                 f"{len(trees) - n} call(s), a JSON document in {n} (read as its JSON text)")
        return mixed[0]
    refused = [f"{p} is {not_text(trees[0][p])}" for p in found if isinstance(trees[0][p], str) and not_text(trees[0][p])]
    f.leave("vocabulary.specialist_output.text", "no value that every tool output has is text"
            + (f" ({'; '.join(refused[:3])})" if refused else ""),
            "point specialist_output.text at each tool's text (traces sample --json); without it the whole "
            "output is read")
    return None


def _data_pointer(trees: list[dict], pairs: list, text: str | None, f: Findings) -> None:
    """The structured part of a tool's output: an object (or list) beside the text, or the tool's value
    itself where the tool returns a JSON document."""
    for key in DATA_KEYS:
        for pointer in sorted({p for t in trees for p in t if p.count("/") == 2 and last_key(p) == key}):
            held = [t[pointer] for t in trees if pointer in t]
            if all(isinstance(v, (dict, list)) for v in held) and any(held):
                sp, s = next(pair for t, pair in zip(trees, pairs) if t.get(pointer))
                f.choose("vocabulary.specialist_output.data", pointer, where(sp, s, pointer))
                return
    if text is not None:
        with_data = [pair for t, pair in zip(trees, pairs) if isinstance(t.get(text), (dict, list)) and t[text]]
        if with_data:
            names = sorted({sp.get("name") for sp, _ in with_data})
            f.choose("vocabulary.specialist_output.data", text, where(*with_data[0], text) + ": a JSON document "
                     f"where the tool returns data ({', '.join(names)})")


def _error_shape(docs: list[dict], pairs: list, base: str, f: Findings) -> None:
    status = [p for p in common(docs) if last_key(p) in STATUS_KEYS and p.rsplit("/", 1)[0] == base]
    if not status:
        return
    pointer = status[0]
    values = {str(d[pointer]).lower() for d in docs}
    failed = [v for v in values if v in FAILED]
    tool_message = all(isinstance(d.get(base + "/type"), str) and d.get(base + "/type") == "tool" for d in docs)
    if failed or tool_message:
        value = failed[0] if failed else "error"
        why = "the failed calls of the traces" if failed else "LangChain's ToolMessage: status error when a tool fails"
        shape = {"pointer": pointer, "equals": value}
        detail = next((f"{base}/{k}" for k in DETAIL_KEYS for d in docs if f"{base}/{k}" in d
                       and str(d[pointer]).lower() == value), None)
        if detail:
            shape["message"] = detail
        f.choose("vocabulary.specialist_output.errors", [shape], where(*pairs[0], pointer) + f"; {why}")
    else:
        f.leave("vocabulary.specialist_output.errors", f"every specialist call has {pointer} = "
                f"{', '.join(sorted(values))}; no failed call shows the failure shape",
                "force one tool failure, or declare the shape under specialist_output.errors")


def _strings(value: Any, prefix: str) -> dict[str, str]:
    return {p: v for p, v in leaves(value, prefix) if isinstance(v, str) and v.strip()}


def find_query(samples: list[Sampled], f: Findings) -> str | None:
    """The pointer of the question in a trace's input, read from the traces whose input has text.

    A trace without one (the OpenAI Agents SDK records no input for a turn its guardrail
    stopped before the model ran) gets no case, and the draft says so.
    """
    docs = [d for d in (_strings(s.trace.get("input"), "") for s in samples) if d]
    found = sorted(common(docs), key=lambda p: (_rank(p, QUERY_KEYS), -len({d[p] for d in docs})))
    if not found:
        f.leave("cases", "no text common to every trace's input holds the question", "write the queries by hand")
        return None
    without = [s for s in samples if not _strings(s.trace.get("input"), "")]
    if without:
        f.leave("cases", f"{len(without)} trace(s) have no text in their input (as trace {without[0].short()}): "
                "no case is drafted from them", "write those questions as cases by hand")
    first = next(s for s in samples if _strings(s.trace.get("input"), ""))
    f.choose("adopt.query", found[0], f"the input of trace {first.short()}, {found[0]}")
    return found[0]


def find_answer(samples: list[Sampled], f: Findings, roles: Roles, query_at: str | None) -> None:
    # Answered turns that ran to their end (a turn that raised has no answer to find).
    chosen = [s for s in samples if answered(s, roles) and not s.trace.get("error_info")] or samples
    docs = []
    for s in chosen:
        question = _strings(s.trace.get("input"), "").get(query_at or "", None)
        docs.append({p: v for p, v in _strings(s.trace.get("output"), "").items() if v != question})
    found = sorted(common(docs), key=lambda p: (_rank(p, ANSWER_KEYS), -sum(len(d[p]) for d in docs)))
    if not found:
        f.leave("target.answer_from", "no text common to every answered trace's output holds the answer",
                "set answer_from: stdout, or stdout_json:<pointer> when the agent prints JSON")
        return
    f.choose("target.answer_from", "trace_output:" + found[0], f"the output of trace {chosen[0].short()}, {found[0]}")
