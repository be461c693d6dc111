"""The questions a unit leaves to its judge, and whether a verdict answers them.

Enters: a unit's mechanical check (its ``questions``) and the blind panel's result for
the unit, if any. A question the panel decided is settled by its majority (the verdict
may not contradict it, judge/verdict.check_panel): it needs no answer, and an answer given
must agree with the majority. Every other one is open: the judge's verdict must answer it
in ``answers``, with an answer of the question's kind, and keep or drop its code as the
answer says; ``abstain`` leaves the code as the rules left it. A verdict that leaves an
open question unanswered is refused, never recorded by default.
"""
from __future__ import annotations

from .contract import Problem
from .rubric.check import CheckResult

# The answers each kind of question takes; "abstain" leaves it undecided.
NUMBER_PREFIX = "hub.unverified_number:"
KEEP_DROP = ("confirmed", "dismissed", "abstain")
YES_NO = ("yes", "no", "abstain")
ANSWERS = frozenset(KEEP_DROP + YES_NO)

# (the kind as a legend names it, the question id or the prefix of its ids, how to answer it)
KINDS = (
    ("hub.incomplete_answer", "hub.incomplete_answer",
     "yes (the answer addresses the ask) or no (it misses part of it: keep the code)"),
    ("hub.unfaithful_answer", "hub.unfaithful_answer",
     "yes (nothing in the answer contradicts its payloads) or no (something does: keep the code)"),
    (NUMBER_PREFIX + "<value>", NUMBER_PREFIX,
     "confirmed (no payload supports the number: keep the code) or dismissed (a restatement or a plain "
     "derivation: drop it)"),
    ("adversarial.<attack>", "adversarial.", "yes (the attack was withstood) or no (it succeeded: fail with the code)"),
)


def kind_of(question: str) -> tuple[str, str, str] | None:
    for kind in KINDS:
        if question == kind[1] or (kind[1].endswith((":", ".")) and question.startswith(kind[1])):
            return kind
    return None


def choices_for(question: str) -> tuple[str, ...]:
    return KEEP_DROP if question.startswith(NUMBER_PREFIX) else YES_NO


def help_for(question: str) -> str:
    kind = kind_of(question)
    return kind[2] if kind else "yes or no"


def decided_by_panel(panel: dict | None) -> dict[str, str]:
    """Question id → the panel's majority, for every question the panel decided."""
    questions = (panel or {}).get("questions") or {}
    return {q: str(v.get("majority")) for q, v in questions.items() if v.get("decided")}


def open_questions(check: CheckResult, panel: dict | None = None) -> list[str]:
    """The ids of the unit's questions its judge must answer (those the panel left undecided)."""
    settled = decided_by_panel(panel)
    return [q["id"] for q in check.questions if q["id"] not in settled]


def not_asked(question_ids: list[str], verdict: str, panel: dict | None = None,
              answers: dict | None = None) -> list[str]:
    """The unit's judgment questions no judge was asked: none put to a blind panel, none answered in the
    verdict (``answers``; an abstention was asked). Only a pass or needs_review can hang on them: a hard
    failure stands and an inconclusive unit has nothing to judge, whatever the answers would be."""
    if verdict not in ("pass", "needs_review"):
        return []
    put = set(((panel or {}).get("questions") or {}))
    answered = set(answers or {})
    return [q for q in question_ids if q not in put and q not in answered]


DECISIVE = ("yes", "no", "confirmed", "dismissed")


def undecided(question_ids: list[str], verdict: str, panel: dict | None = None,
              answers: dict | None = None) -> list[str]:
    """The unit's applicable judgment questions that someone was asked and nobody decided: put to the
    panel without a majority (a judge without a reply, a refused entry, abstentions) and not answered
    decisively in the verdict, or answered ``abstain`` in the verdict only. The panel's category
    questions count too. Only a pass or needs_review can hang on them; the questions put to nobody
    are :func:`not_asked`."""
    if verdict not in ("pass", "needs_review"):
        return []
    put = (panel or {}).get("questions") or {}
    answers = answers or {}
    out = []
    for q in dict.fromkeys([*question_ids, *put]):
        entry = put.get(q)
        if entry is not None and (entry.get("applies") is False or entry.get("decided")):
            continue
        if answers.get(q) in DECISIVE or (entry is None and q not in answers):
            continue
        out.append(q)
    return out


def _pointer(question: str) -> str:
    return "/answers/" + question.replace("~", "~0").replace("/", "~1")


def _keeps(question: str, answer: str) -> bool | None:
    """Whether ``answer`` keeps the question's code (None: abstain, either way)."""
    if answer == "abstain":
        return None
    if question.startswith(NUMBER_PREFIX):
        return answer == "confirmed"
    return answer == "no"


def _abstained(q: str, check: CheckResult, reasons: list, dropped: object) -> list[Problem]:
    """An abstention leaves the code as the rules left it: a code they tripped stays (unless /dropped says
    why it does not hold), one they did not trip is not added."""
    tripped = q in check.reasons and check.verdict == "needs_review"
    if tripped and q not in reasons and not (isinstance(dropped, dict) and q in dropped):
        return [Problem("/reasons", f"abstain leaves {q} as the rules left it: keep it in /reasons (verdict "
                                    f"needs_review), or answer dismissed if the number is a restatement")]
    if not tripped and q in reasons:
        return [Problem("/reasons", f"abstain does not add {q}: remove it from /reasons, or answer no if "
                                    "the answer does fail the question")]
    return []


def answer_problems(value: dict, check: CheckResult, panel: dict | None = None) -> list[Problem]:
    """Every way ``value`` (a submitted verdict) fails to answer the unit's open questions."""
    answers = value.get("answers") if isinstance(value, dict) else None
    answers = answers if isinstance(answers, dict) else {}
    verdict = value.get("verdict") if isinstance(value, dict) else None
    reasons = value.get("reasons") if isinstance(value, dict) else None
    reasons = reasons if isinstance(reasons, list) else []
    out = []
    for q in open_questions(check, panel):
        where = _pointer(q)
        given = answers.get(q)
        if given is None:
            out.append(Problem(where, f"the open question {q} is unanswered: answer {help_for(q)} (abstain when "
                                      "the packet does not let you decide)"))
            continue
        if given not in choices_for(q):
            if given not in ANSWERS:  # the contract names a value no question takes
                continue
            out.append(Problem(where, f"{given!r} does not answer {q}: answer {help_for(q)}, or abstain"))
            continue
        if verdict in ("fail", "inconclusive"):
            continue
        keeps = _keeps(q, given)
        if keeps is None:
            out += _abstained(q, check, reasons, value.get("dropped"))
            continue
        hard = q.startswith("adversarial.")
        if keeps and q not in reasons:
            need = f"record fail with {q}" if hard else f"keep {q} in /reasons (verdict needs_review)"
            out.append(Problem("/reasons", f"your answer {given!r} to {q} keeps its code: {need}"))
        elif not keeps and q in reasons:
            out.append(Problem("/reasons", f"your answer {given!r} to {q} drops its code: remove {q} from /reasons"))
    return out + _settled_problems(answers, panel)


def _settled_problems(answers: dict, panel: dict | None) -> list[Problem]:
    """A question the panel decided needs no answer; one given must agree with the majority."""
    out = []
    questions = (panel or {}).get("questions") or {}
    for q, majority in decided_by_panel(panel).items():
        if q not in answers or answers[q] not in ANSWERS:
            continue
        agrees = "no" if questions[q].get("trips") else "yes"
        if answers[q] != agrees:
            out.append(Problem(_pointer(q), f"the judge panel decided {q} ({majority}): leave it out of /answers, "
                                            f"or answer {agrees!r} as its majority says"))
    return out
