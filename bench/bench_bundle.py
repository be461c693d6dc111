"""What one judge of a round reads: the bundle of the recorded clean default suite, in bytes.

Builds a judge packet for every unit of the recorded clean run (tests/recorded/data/clean)
that the panel would be asked about (the mechanical check hands a judgment question on), shows the fixed calibration items beside them as a round does,
renders the round's bundle as judge-packets writes it and the hand-over file a chat judge
opens, and prints their bytes, the bytes per packet and the share the per-packet part and
the response format take. Nothing is run or written.

    uv run python bench/bench_bundle.py
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import random  # noqa: E402

from obai_e2e.judge.panel import handover, schema  # noqa: E402
from obai_e2e.judge.panel.fixed_items import item_packet, load_calibration  # noqa: E402
from obai_e2e.judge.panel.packets import (  # noqa: E402
    judge_packet,
    load_catalog,
    prompt_path,
    render_bundle,
)
from obai_e2e.judge.panel.questions import STANDING_QUESTIONS, plan_questions  # noqa: E402
from obai_e2e.judge.rubric.outcome import NEEDS_JUDGMENT  # noqa: E402
from tests import recorded  # noqa: E402


def packets() -> list[dict]:
    codes, _ = plan_questions(load_catalog(None)[0])
    out = []
    for n, unit in enumerate(recorded.clean_units(), 1):
        packet = recorded.packet(recorded.CLEAN, unit)
        check = recorded.check(packet)
        if check.verdict == "inconclusive":
            continue
        asked = {o.rule for o in check.outcomes if o.status == NEEDS_JUDGMENT and o.rule in codes}
        if not asked:  # nothing to judge (a refusal, an attack a rule decided): the round has no packet for it
            continue
        questions = [(q, feeds in asked) for feeds, q in sorted(codes.items())
                     if feeds in STANDING_QUESTIONS or feeds in asked]
        out.append(judge_packet(f"{n:016x}", packet, unit, questions)[0])
    rng = random.Random(0)
    fixed = [item_packet(f"{len(out) + i:016x}", item, [(q, feeds in item.gold) for feeds, q in sorted(codes.items())
                                                        if feeds in STANDING_QUESTIONS or feeds in item.gold],
                         out, rng, schema.CURRENT_VERSION)
             for i, item in enumerate(load_calibration().items, 1)]
    return out + fixed


def main() -> int:
    prompt = prompt_path().read_text(encoding="utf-8")
    built = packets()
    bundle = render_bundle(prompt, built)
    empty = render_bundle(prompt, [])
    note = handover.note(Path("/tmp/judge/reply.json"))
    size, base = len(bundle.encode("utf-8")), len(empty.encode("utf-8"))
    per_judge = size + len(note.encode("utf-8"))
    print(f"packets                      {len(built)} (with {len(load_calibration().items)} fixed calibration items)")
    print(f"bundle.md                    {size:>9,} bytes  (~{size // 4:,} tokens)")
    print(f"  of it without any packet   {base:>9,} bytes  (prompt, questions, response format)")
    print(f"  per packet (mean)          {(size - base) / max(1, len(built)):>11,.0f} bytes")
    print(f"one judge's hand-over file   {per_judge:>9,} bytes  (~{per_judge // 4:,} tokens)")
    print(f"three judges                 {3 * per_judge:>9,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
