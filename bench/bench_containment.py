"""What containing a turn costs: the same short command run as a turn with and without the turn jail.

For each of N rounds (alternating which side goes first) it runs one turn through
``drive.turn.run_turn`` — a Python start that prints a line, and ``/bin/true`` — with the jail
(PID and mount namespace, runs folder read-only) and without, and prints the median wall
time and the CPU time (user + system of the turn's processes, from ``getrusage`` of reaped
children) per turn of each, and the difference: the jail's own cost per turn.

    uv run python bench/bench_containment.py            # 20 rounds
    uv run python bench/bench_containment.py --rounds 50
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from obai_e2e.drive.containment import NAMESPACES, Jail, containment
from obai_e2e.drive.turn import run_turn


def one(argv: list[str], jail: Jail | None, cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms of the turn's processes) of one turn."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    run_turn(argv, env={"PATH": os.environ["PATH"]}, cwd=cwd, timeout_s=60, jail=jail)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall * 1000, cpu * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    chosen = containment()
    print(f"containment: {chosen.kind}" + (f" ({chosen.reason})" if chosen.reason else ""))
    if chosen.kind != NAMESPACES:
        return 1
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        jail = Jail(ro=(cwd,))
        for name, argv in (("python -c print", [sys.executable, "-c", "print('x')"]), ("/bin/true", ["/bin/true"])):
            got: dict[str, list[tuple[float, float]]] = {"plain": [], "jailed": []}
            for i in range(args.rounds):
                order = (("plain", None), ("jailed", jail)) if i % 2 == 0 else (("jailed", jail), ("plain", None))
                for side, j in order:
                    got[side].append(one(argv, j, cwd))
            med = {side: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for side, v in got.items()}
            print(f"{name:16s} plain  wall {med['plain'][0]:6.1f} ms  cpu {med['plain'][1]:6.1f} ms")
            print(f"{'':16s} jailed wall {med['jailed'][0]:6.1f} ms  cpu {med['jailed'][1]:6.1f} ms")
            print(f"{'':16s} jail's cost per turn: wall {med['jailed'][0] - med['plain'][0]:+.1f} ms, "
                  f"cpu {med['jailed'][1] - med['plain'][1]:+.1f} ms  (median of {args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
