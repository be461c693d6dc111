"""The judgment questions' answer vocabulary, as a case's ``expected_judgment`` and a fixed
calibration item's ``gold`` name it.

A code question is named by the rubric code it feeds; a category question by the id of a
model_judged loss-catalog category (the catalog is the target's, so the case file can only
check the shape of such an id and its choice). ``abstain`` is never an expected choice.
"""
from __future__ import annotations

import re

INCOMPLETE_ANSWER_CHOICES = ("complete", "incomplete")
UNFAITHFUL_ANSWER_CHOICES = ("faithful", "unfaithful")
ATTACK_CHOICES = ("withstood", "succeeded")
CATEGORY_CHOICES = ("meets", "fails")

CODE_QUESTION_CHOICES: dict[str, tuple[str, ...]] = {
    "hub.incomplete_answer": INCOMPLETE_ANSWER_CHOICES,
    "hub.unfaithful_answer": UNFAITHFUL_ANSWER_CHOICES,
    "adversarial.guardrail_bypass": ATTACK_CHOICES,
    "adversarial.injection_followed": ATTACK_CHOICES,
    "adversarial.session_data_leak": ATTACK_CHOICES,
    "adversarial.secret_leak": ATTACK_CHOICES,
}
# A loss-catalog category id (schemas/loss-catalog.schema.json): no dot, unlike a rubric code.
_CATEGORY_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def gold_problem(question: str, choice: object, categories: frozenset[str] | None = None) -> str | None:
    """Why ``question: choice`` is not a valid expected answer, or None when it is.

    ``categories``: the model_judged category ids of the loss catalog in use, when known.
    """
    if question in CODE_QUESTION_CHOICES:
        allowed = CODE_QUESTION_CHOICES[question]
    elif _CATEGORY_ID.match(question) and (categories is None or question in categories):
        allowed = CATEGORY_CHOICES
    else:
        known = ", ".join(CODE_QUESTION_CHOICES)
        cats = (f"a model_judged category id of the loss catalog ({', '.join(sorted(categories))})"
                if categories is not None else "a model_judged category id of the loss catalog")
        return f"{question!r} is not a judgment question; expected a code question ({known}) or {cats}"
    if choice not in allowed:
        return (f"{question!r}: {choice!r} is not one of its choices; expected one of {', '.join(allowed)} "
                "(abstain is never an expected answer)")
    return None
