"""The review step of the chat flow: the units still without a verdict, as their judge reads them, in pages.

Enters: a run plan (its units with a packet and no report row) or one unit. Leaves: pages
of at most ``max_chars`` characters, each with the legends its units refer to (the codes
each admits, how each kind of open question is answered) given once. Units that need
judgment come first; a page ends between units, and a unit longer than a page is cut by
its own bounds (judge/review/view). ``full`` prints everything of each unit instead: every
rule outcome with evidence, the whole answer and curated trace.
"""
from __future__ import annotations

import json

from ..base.modeltext import cap, json_safe
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet_record import load_packet
from ..judge.open_questions import kind_of
from ..judge.panel.aggregate import panel_for_unit
from ..judge.review.view import UnitView, unit_view
from ..judge.rubric import check_packet
from ..judge.verdict import applicable_codes, readable
from .plan import RunPlan

MAX_CHARS = 27000  # a chat tool shows 30,000 characters whole
FULL_STRING_CHARS = 200_000  # --full: a string of a unit (its answer, its trace) at most
FULL_ITEMS = 10_000          # --full: items of a list (rule outcomes, open questions) at most


def _legend_key(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"A{index}"


class _Admissible:
    """The distinct admissible code sets of a review, each named once by a letter."""

    def __init__(self) -> None:
        self.sets: dict[str, str] = {}

    def key(self, config: TargetConfig, unit: Unit, check) -> str:
        if check.verdict == "inconclusive":
            return f"inconclusive {', '.join(check.reasons)} only"
        hard, soft = applicable_codes(unit.case, config, unit.channel)
        text = f"fail one of {readable(hard) or '(none)'}; needs_review any of {readable(soft) or '(none)'}"
        for k, v in self.sets.items():
            if v == text:
                return k
        k = _legend_key(len(self.sets))
        self.sets[k] = text
        return k


def _loaded(plan: RunPlan, units: list[Unit]):
    for unit in units:
        packet = load_packet(plan.run_dir, unit.id)
        if packet is not None:  # not driven yet: nothing to review
            yield unit, packet


def _full(config: TargetConfig, plan: RunPlan, unit: Unit, packet) -> dict:
    check = check_packet(packet, unit.case, config)
    hard, soft = applicable_codes(unit.case, config, unit.channel)
    out = {**check.to_json(), "admissible": {"fail": [readable([p]) for p in hard],
                                             "needs_review": [readable([p]) for p in soft]},
           "judge_panel": panel_for_unit(plan.run_dir, unit.id), "question": packet.query, "answer": packet.answer,
           "trace": packet.trace.curated}
    if packet.followup is not None:
        f = packet.followup
        out["followup"] = {"question": f.query, "answer": f.answer, "trace": f.trace.curated}
    return out


def _views(config: TargetConfig, plan: RunPlan, units: list[Unit], legend: _Admissible) -> list[UnitView]:
    views = []
    for unit, packet in _loaded(plan, units):
        check = check_packet(packet, unit.case, config)
        view = unit_view(unit, packet, check, panel_for_unit(plan.run_dir, unit.id), "", short=len(units) > 1)
        if view.needs_judgment or len(units) == 1:
            view.admissible = legend.key(config, unit, check)
        views.append(view)
    return sorted(views, key=lambda v: not v.needs_judgment)  # stable: plan order within each group


def _answer_legend(views: list[UnitView]) -> list[str]:
    kinds = {kind_of(q) for v in views for q in v.open} - {None}
    return [f"  {name}: {text}" for name, _, text in sorted(kinds)]


# A block of a page: (its legend key or "", its text as printed, what it shows).
Block = tuple[str, str, object]


def _pages(blocks: list[Block], legend: dict[str, str], budget: int) -> list[list[Block]]:
    """Blocks packed into pages of at most ``budget`` characters, counting the legend lines each page needs."""
    def cost(key: str, text: str, keys: set[str]) -> int:  # a legend line the first time a page needs it
        return len(text) + 1 + (len(legend[key]) + 8 if key in legend and key not in keys else 0)

    pages: list[list[Block]] = []
    current: list[Block] = []
    size, keys = 0, set()
    for block in blocks:
        key, text, _ = block
        if current and size + cost(key, text, keys) > budget:
            pages.append(current)
            current, size, keys = [], 0, set()
        size += cost(key, text, keys)
        current.append(block)
        keys.add(key)
    return pages + ([current] if current else [])


def review(config: TargetConfig, plan: RunPlan, *, unit_id: str | None = None, page: int = 1,
           max_chars: int = MAX_CHARS, fmt: str = "text", full: bool = False) -> str:
    """The page ``page`` of the review of ``plan`` (or of one unit), as text or JSON."""
    units = [plan.unit(unit_id)] if unit_id else list(plan.to_judge)
    legend = _Admissible()
    if full:
        fulls = [json_safe(_full(config, plan, u, packet), FULL_STRING_CHARS, one_line=False, max_items=FULL_ITEMS,
                           max_depth=12) for u, packet in _loaded(plan, units)]
        blocks = [("", json.dumps(d, ensure_ascii=False), d) for d in fulls]
    else:
        blocks = [(v.admissible, v.text() if fmt == "text" else json.dumps(v.to_json(), ensure_ascii=False), v)
                  for v in _views(config, plan, units, legend)]
    reserve = 800  # the header, the answers' legend and the footer
    budget = max(2000, max_chars - reserve)
    if fmt == "text" and not full:  # a unit longer than a page is cut to one (with its legend line)
        blocks = [(k, cap(text, budget - len(legend.sets.get(k, "")) - 8,
                          hint=f"review.py --id {item.unit} --full shows all"), item) for k, text, item in blocks]
    pages = _pages(blocks, legend.sets, budget) or [[]]
    page = min(max(1, page), len(pages))
    shown = pages[page - 1]
    views = [item for _, _, item in shown if isinstance(item, UnitView)]
    waiting = len(plan.pending)
    if not units:
        after = f"; {waiting} units are not driven yet: drive them first" if waiting else ": go on to finish the run"
        next_step = "every driven unit has a verdict" + after
    elif page < len(pages):
        next_step = f"record verdicts for the units above, then review again (or --page {page + 1} to read on)"
    else:
        next_step = "record a verdict for each unit above (record_verdict.py --batch)"
    used = {v.admissible for v in views}
    sets = {k: t for k, t in legend.sets.items() if k in used}
    answers = _answer_legend(views)
    if fmt == "json" or full:
        head = {"run": plan.meta.run_id, "page": page, "pages": len(pages), "units_on_page": len(shown),
                "without_verdict": len(units), "not_driven_yet": waiting, "next": next_step}
        body = [item.to_json() if isinstance(item, UnitView) else item for _, _, item in shown]
        return json.dumps({**head, "admissible": sets, "answers": answers, "units": body}, ensure_ascii=False) + "\n"
    lines = [f"# review {plan.meta.run_id}: page {page} of {len(pages)}, {len(shown)} of {len(units)} units without "
             "a verdict" + (f" ({waiting} not driven yet)" if waiting else "")]
    if sets:
        lines.append("admissible codes:")
        lines += [f"  {k}: {t}" for k, t in sets.items()]
    if answers:
        lines.append("answers to open questions (or abstain):")
        lines += answers
    lines += [text for _, text, _ in shown]
    lines.append(f"next: {next_step}")
    return "\n".join(lines) + "\n"
