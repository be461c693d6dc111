"""From one results.json unit (one repeat of a case) to its loss per category and in total.

Deterministic category with max M: each distinct rubric code the rules tripped counts once,
1 for a fail and 0.5 for a needs_review; the category loss is min(Σ, M) / M. Codes the
judge dismissed (``answers[code] == "dismissed"``) or overrode (``override.rule``) do not
count: the recorded verdict no longer carries them.

model_judged category: the judge panel's ratings for its codes or for the category itself
(mean over the judges that did not abstain), else the judge's yes/no answer (``no`` = the
answer does not address the ask = 1), else nothing: the category is ``unbewertbar`` for
that repeat, never 0.

A category marked ``needs_execution`` is unbewertbar when the scoring mode (or the unit)
is B. A category with a ``scope`` (ui, adversarial) is scored only for units of that scope
on which a rule feeding it ran (pass or fail); elsewhere it is unbewertbar, never 0: a UI
category during an outage, an adversarial category in a run from before it existed. The
total is the weighted mean over the categories that were scored.

A unit whose UI was down before the question reached the agent (inconclusive, reason
``ui_outage``) is neither completed nor aborted: an upstream outage is not a harness
failure to fix, and it is no loss of the system under test.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..config.units import unit_key
from .catalog import SCOPE_ADVERSARIAL, SCOPE_UI, Catalog

COMPLETED_VERDICTS = frozenset({"pass", "fail", "needs_review"})
ABORTED_VERDICT = "inconclusive"
COMPLETED, ABORTED, PLANNED, OUTAGE = "completed", "aborted", "planned", "outage"
OUTAGE_REASON = "ui_outage"
SEVERITY = {"fail": 1.0, "needs_review": 0.5}
ANSWER_LOSS = {"no": 1.0, "yes": 0.0}


def state_of(verdict: str | None, reasons=()) -> str:
    """completed (pass/fail/needs_review), aborted (inconclusive), outage (inconclusive: ui_outage),
    or planned (not_judged)."""
    if verdict in COMPLETED_VERDICTS:
        return COMPLETED
    if verdict == ABORTED_VERDICT:
        return OUTAGE if OUTAGE_REASON in (reasons or ()) else ABORTED
    return PLANNED


def tripped_codes(entry: dict) -> dict[str, float]:
    """Distinct rubric codes the rules tripped, with their severity (the higher one wins)."""
    # "status" is required by the results schema; most outcomes pass, so filter them first.
    hits = [o for o in entry.get("rule_outcomes") or () if o["status"] in SEVERITY]
    return _codes_of(hits, entry) if hits else {}


def _codes_of(hits: list, entry: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for o in hits:
        sev = SEVERITY[o["status"]]
        codes = o.get("codes") or ((o.get("code"),) if o.get("code") else ())
        for code in codes:
            if out.get(code, 0.0) < sev:
                out[code] = sev
    if out:
        answers = entry.get("answers") or {}
        override = (entry.get("override") or {}).get("rule")
        for code in list(out):
            if answers.get(code) == "dismissed" or code == override:
                del out[code]
    return out


_NUMBER = (int, float)  # exact types: a bool is no rating


@dataclass(slots=True)
class RepeatLoss:
    """One repeat's state and losses; ``None`` means unbewertbar (or not completed)."""

    unit_id: str
    case_id: str
    state: str
    losses: list
    total: float | None
    ratings: dict          # model_judged category index -> per-judge category losses (≥ 1 judge)
    entry: dict


class UnitScorer:
    """Scores results.json units against one catalog in one mode."""

    def __init__(self, catalog: Catalog, mode: str):
        self.catalog = catalog
        self.mode = mode
        cats = catalog.categories
        self.n = len(cats)
        self.weights = [c.weight for c in cats]
        self.maxes = [c.max for c in cats]
        self.judged = [c.index for c in cats if c.model_judged]
        self.deterministic = [c.index for c in cats if not c.model_judged]
        self.needs_execution = [c.needs_execution for c in cats]
        self.scopes = [c.scope for c in cats]
        self.scoped = [c.index for c in cats if c.scope in (SCOPE_UI, SCOPE_ADVERSARIAL)]
        self._judged_cache: dict[str, tuple[int, ...]] = {}
        self._scoped_cache: dict[str, tuple[int, ...]] = {}
        self._bases: dict[bool, tuple[list, float]] = {}

    def evaluated(self, entry: dict) -> frozenset[int]:
        """Scoped categories this unit can be scored in: its scope fits and a rule feeding it ran."""
        if not self.scoped:
            return frozenset()
        channel, kind = entry.get("channel") or "cli", entry.get("kind") or "everyday"
        fits = [i for i in self.scoped if (self.scopes[i] == SCOPE_UI and channel == "ui")
                or (self.scopes[i] == SCOPE_ADVERSARIAL and kind == "adversarial")]
        if not fits:
            return frozenset()
        found: set[int] = set()
        cache, cats = self._scoped_cache, self.catalog.categories
        for o in entry.get("rule_outcomes") or ():
            if o["status"] == "skipped":
                continue
            for key in (o.get("rule"), o.get("code")):
                if not key:
                    continue
                hit = cache.get(key)
                if hit is None:
                    hit = cache[key] = tuple(i for i in self.scoped if cats[i].matches(key))
                found.update(hit)
        return frozenset(found.intersection(fits))

    def judged_for(self, key: str) -> tuple[int, ...]:
        """model_judged categories a rating or answer key feeds: a code they list, or their id."""
        hit = self._judged_cache.get(key)
        if hit is None:
            cats = self.catalog.categories
            hit = tuple(i for i in self.judged if key == cats[i].id or cats[i].matches(key))
            self._judged_cache[key] = hit
        return hit

    def _base(self, mode_b: bool) -> tuple[list, float]:
        """Losses of a repeat that tripped nothing (0, or None where unscorable), and their weight sum."""
        losses = [None] * self.n
        den = 0.0
        for i in self.deterministic:
            if not (mode_b and self.needs_execution[i]) and self.scopes[i] not in (SCOPE_UI, SCOPE_ADVERSARIAL):
                losses[i] = 0.0
                den += self.weights[i]
        return losses, den

    def score(self, entry: dict) -> RepeatLoss:
        return RepeatLoss(entry["unit_id"], unit_key(entry["case_id"], entry.get("channel")), *self.losses_of(entry),
                          entry)

    def losses_of(self, entry: dict) -> tuple[str, list, float | None, dict]:
        """(state, per-category losses, total, ratings) of one repeat."""
        verdict = entry.get("verdict")
        if verdict not in COMPLETED_VERDICTS:
            return state_of(verdict, entry.get("reasons")), [None] * self.n, None, {}
        state = COMPLETED
        mode_b = self.mode == "B" or entry.get("mode") == "B"
        base = self._bases.get(mode_b)
        if base is None:
            base = self._bases[mode_b] = self._base(mode_b)
        losses, den = base[0][:], base[1]
        evaluated = self.evaluated(entry) if self.scoped else frozenset()
        for i in evaluated:
            if not self.catalog.categories[i].model_judged and not (mode_b and self.needs_execution[i]):
                losses[i] = 0.0
                den += self.weights[i]
        num = 0.0
        hits = [o for o in entry.get("rule_outcomes") or () if o["status"] in SEVERITY]
        tripped = _codes_of(hits, entry) if hits else None
        if tripped:
            sums: dict[int, float] = {}
            categories_for = self.catalog.categories_for
            for code, sev in tripped.items():
                for i in categories_for(code):
                    sums[i] = sums.get(i, 0.0) + sev
            for i, total in sorted(sums.items()):
                if losses[i] is None:  # model_judged, or not scorable in mode B
                    continue
                m = self.maxes[i]
                losses[i] = min(total, m) / m
                num += self.weights[i] * losses[i]
        ratings: dict = {}
        if self.judged and (entry.get("judge_panel") or entry.get("answers")):
            self._judged(entry, losses, ratings, mode_b, evaluated)
            for i in self.judged:
                if losses[i] is not None:
                    num += self.weights[i] * losses[i]
                    den += self.weights[i]
        total = num / den if den > 0 else None
        return state, losses, total, ratings

    def _judged(self, entry: dict, losses: list, ratings: dict, mode_b: bool, evaluated: frozenset = frozenset()) -> None:
        """Fill the model_judged categories: panel ratings first, else yes/no answers."""
        scoped = self.scoped
        judged_for = self.judged_for
        panel = entry.get("judge_panel")
        panel_ratings = panel.get("ratings") if panel and type(panel) is dict else None
        if panel_ratings and type(panel_ratings) is dict:
            lists_by: dict[int, list] = {}
            for k, v in panel_ratings.items():
                if type(v) is list:
                    for i in judged_for(k):
                        lists_by.setdefault(i, []).append(v)
            for i, lists in lists_by.items():
                if (mode_b and self.needs_execution[i]) or (i in scoped and i not in evaluated):
                    continue
                m = self.maxes[i]
                if len(lists) == 1:  # one code (or the category itself) per judge: the common case
                    per_judge = [min(float(x), m) / m for x in lists[0] if type(x) in _NUMBER]
                else:  # a judge's loss sums the codes it rated
                    per_judge = []
                    for j in range(max(map(len, lists))):
                        vals = [v[j] for v in lists if j < len(v) and type(v[j]) in _NUMBER]
                        if vals:
                            per_judge.append(min(math.fsum(vals), m) / m)
                if per_judge:
                    losses[i] = math.fsum(per_judge) / len(per_judge)
                    ratings[i] = per_judge
        answers = entry.get("answers")
        if not answers:
            return
        sums: dict[int, float] = {}
        cache = self._judged_cache
        for k, a in answers.items():
            loss = ANSWER_LOSS.get(a)
            if loss is None:
                continue
            cats = cache.get(k)
            for i in (judged_for(k) if cats is None else cats):
                if i not in ratings:
                    sums[i] = sums.get(i, 0.0) + loss
        for i, total in sums.items():
            if (mode_b and self.needs_execution[i]) or (i in scoped and i not in evaluated):
                continue
            m = self.maxes[i]
            losses[i] = min(total, m) / m
            ratings[i] = [losses[i]]
