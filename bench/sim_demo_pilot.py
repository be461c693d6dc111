"""How often a pilot of the demo's backtest partition gives an n_min its 8 cases can cover.

Simulates the partition as the demo runs it with ``OBAI_DEMO_FLAKE=seed:rate``: per turn,
with probability rate/2 an extra ungrounded number (answer_grounding) and with rate/2 an
extra specialist (routing_specialists), each a needs_review (0.5, capped at 1 per unit);
S1 is stochastic (3 repeats, averaged), S2–S5 one turn, A1–A3 two turns (the job and its
follow-up). The pilot pools the spread over R runs per category, takes the largest (pool
max), rounds it up to three decimals, and n_min = ceil(16·s²/mde²), at least 2.
``--cases strategy`` simulates a pilot of the strategy cases alone (S1–S5, 7 turns a run).
Besides P(n_min > 8) the table shows how often a pilot sees no deviation at all (s = 0).

    uv run python bench/sim_demo_pilot.py [--pilots 20000] [--cases all|strategy]
"""
from __future__ import annotations

import argparse
import math
import random


def unit_loss(rng: random.Random, p: float, turns: int, repeats: int = 1) -> float:
    vals = [min(0.5 * sum(rng.random() < p for _ in range(turns)), 1.0) for _ in range(repeats)]
    return sum(vals) / len(vals)


def pilot_s(rng: random.Random, rate: float, runs: int, asynchronous: int = 3) -> float:
    best = 0.0
    for _ in range(2):  # the two categories the flake touches
        ss, dof = 0.0, 0
        for _ in range(runs):
            xs = [unit_loss(rng, rate / 2, 1, 3)] + [unit_loss(rng, rate / 2, 1) for _ in range(4)] \
                + [unit_loss(rng, rate / 2, 2) for _ in range(asynchronous)]
            m = sum(xs) / len(xs)
            ss += sum((x - m) ** 2 for x in xs)
            dof += len(xs) - 1
        best = max(best, math.sqrt(ss / dof))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pilots", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", choices=("all", "strategy"), default="all")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    asynchronous = 3 if args.cases == "all" else 0
    print("rate  runs  mde   mean s  P(n_min > 8)  P(s = 0)  median n_min")
    for rate in (0.05, 0.1, 0.2):
        for runs in (3, 4, 5):
            ss = [pilot_s(rng, rate, runs, asynchronous) for _ in range(args.pilots)]
            zero = sum(s == 0 for s in ss) / len(ss)
            for mde in (0.3, 0.35, 0.4):
                nm = sorted(max(2, math.ceil(16 * (math.ceil(s * 1000) / 1000) ** 2 / mde ** 2 - 1e-9)) for s in ss)
                print(f"{rate:4}  {runs:4}  {mde:4}  {sum(ss) / len(ss):6.3f}  {sum(n > 8 for n in nm) / len(nm):12.5f}"
                      f"  {zero:8.3f}  {nm[len(nm) // 2]:12d}")


if __name__ == "__main__":
    main()
