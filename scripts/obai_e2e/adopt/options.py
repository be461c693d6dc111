"""The options specialist and where its payload holds the maximum loss and the break-evens.

Sampled traces and the specialists go in; ``vocabulary.options_specialist`` and
``vocabulary.options_payload`` come out when one specialist's output carries both figures
under keys that say so (``max_loss``, ``maxLoss``, ``breakevens``, ``break_even_points``…),
checked in every call that has them: the loss a number, a numeric string or a word (such as
``unlimited``), the break-evens a list. The starter case of a trace whose payload shows an
unlimited loss and one break-even expects a naked short call; two break-evens and a capped
loss, an iron condor or a long straddle when the question names one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config.target import DEFAULT_OPTIONS_LABELS
from .choices import Findings
from .leaves import escape, nodes
from .roles import Roles, visible, where
from .sample import Sampled

MAX_LOSS = ("maxloss", "maximumloss", "maxrisk", "maximumrisk")
BREAKEVENS = ("breakevens", "breakeven", "breakevenpoints", "breakevenprices", "breakevenprice")
NUMBER = re.compile(r"^\s*-?\$?\d[\d,]*(?:\.\d+)?\s*$")


def _key(key: str) -> str:
    """``max_loss``, ``maxLoss``, ``output.max-loss`` → ``maxloss``."""
    return re.sub(r"[^a-z]", "", key.rsplit(".", 1)[-1].lower())


@dataclass(frozen=True)
class Figures:
    """Where one call's output holds its option figures, and what they are."""

    max_loss: str
    breakevens: str
    loss: Any
    evens: list


def figures(span: dict) -> Figures | None:
    """The first object in the span's output that holds a maximum loss and a list of break-evens."""
    tree = dict(nodes(span.get("output"), "/output"))
    for pointer, value in tree.items():
        if not isinstance(value, dict):
            continue
        inside = {_key(str(k)): f"{pointer}/{escape(str(k))}" for k in value}
        loss_at = next((inside[k] for k in MAX_LOSS if k in inside), None)
        evens_at = next((inside[k] for k in BREAKEVENS if k in inside), None)
        if loss_at and evens_at and isinstance(tree.get(evens_at), list) and _loss(tree.get(loss_at)):
            return Figures(loss_at, evens_at, tree[loss_at], tree[evens_at])
    return None


def _loss(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) or (isinstance(value, str) and (NUMBER.match(value) or value.isalpha()))


def find_options(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    calls = [(sp, s, figures(sp)) for s in samples for sp in visible(s) if roles.is_specialist(sp)]
    found = [(sp, s, fig) for sp, s, fig in calls if fig is not None]
    if not found:
        return
    span, s, fig = found[0]
    name = roles.specialists[roles.specialist_names.index(span.get("name"))]
    other = [sp.get("name") for sp, _, g in found if (g.max_loss, g.breakevens) != (fig.max_loss, fig.breakevens)
             or sp.get("name") != span.get("name")]
    if other:
        f.leave("vocabulary.options_payload", f"option figures in the output of {', '.join(sorted(set(other)))} as well "
                f"as of {span.get('name')}, or at other places", "point options_payload at the options specialist's "
                "figures and name it in options_specialist")
        return
    words = sorted({g.loss for _, _, g in found if isinstance(g.loss, str) and not NUMBER.match(g.loss)
                    and not re.search(DEFAULT_OPTIONS_LABELS["unlimited"], g.loss)})
    if words:
        f.leave("rubric.options_labels", f"{span.get('name')} calls a loss without a cap {', '.join(map(repr, words))}, "
                "a word the options rule does not read as unlimited", "set rubric.options_labels.unlimited to a "
                "pattern that matches it")
    f.choose("vocabulary.options_specialist", name, where(span, s) + ": its output holds a maximum loss and break-evens")
    f.choose("vocabulary.options_payload", {"max_loss": fig.max_loss, "breakevens": fig.breakevens},
             where(span, s) + f" ({fig.max_loss} = {fig.loss!r}, {fig.breakevens} = {fig.evens!r}), and so in every "
             f"call of it ({len(found)})")


def shape(s: Sampled, roles: Roles, query: str) -> str | None:
    """The option shape a starter case expects, from what the options call of this trace returned."""
    for sp in visible(s):
        fig = figures(sp) if roles.is_specialist(sp) else None
        if fig is None:
            continue
        unlimited = isinstance(fig.loss, str) and not NUMBER.match(fig.loss)
        if unlimited and len(fig.evens) == 1:
            return "naked_short_call"
        if not unlimited and len(fig.evens) == 2:
            words = query.lower()
            return "iron_condor" if "condor" in words else "long_straddle" if "straddle" in words else None
    return None
