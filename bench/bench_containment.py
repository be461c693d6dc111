"""What containing a turn costs: the same short command run as a turn plain and through each way to contain it.

For each of N rounds (the order of the ways rotating from round to round) it runs one turn through
``drive.turn.run_turn`` — ``/bin/true``, and a Python start that prints a line (an agent) — plain
(no jail), through bubblewrap and through the built-in jail, and prints per way the median wall
time and CPU time of a turn and the difference to plain: that way's own cost per turn.

CPU time is user + system of the turn's processes, from ``getrusage`` of reaped children. This
process makes itself a child subreaper, so that a namespace's init that bubblewrap leaves behind
when it ends is reaped here and counted too (otherwise the machine's init reaps it, and its CPU
would be missed). A way this machine does not allow is named and skipped.

    uv run python bench/bench_containment.py            # 20 rounds
    uv run python bench/bench_containment.py --rounds 50
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from obai_e2e.drive.containment import BWRAP, JAIL, SWITCH_ENV, Jail, containment
from obai_e2e.drive.turn import run_turn

PR_SET_CHILD_SUBREAPER = 36
PLAIN = "plain"


def reap() -> None:
    """Reap the orphans this subreaper was given (a namespace's init, once bubblewrap has ended)."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def one(way: str, argv: list[str], jail: Jail, cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms of the turn's processes) of one turn contained ``way``."""
    if way != PLAIN:
        os.environ[SWITCH_ENV] = way
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    turn = run_turn(argv, env={"PATH": os.environ["PATH"]}, cwd=cwd, timeout_s=60,
                    jail=None if way == PLAIN else jail)
    wall = time.perf_counter() - t0
    reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if turn.exit_code != 0 or turn.containment != (way if way != PLAIN else "none"):
        raise SystemExit(f"{way}: {argv[0]} ended with {turn.exit_code} ({turn.containment}): {turn.stderr_tail}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall * 1000, cpu * 1000


def ways() -> list[str]:
    """plain, and each way to contain a turn that works here."""
    out = [PLAIN]
    for way in (BWRAP, JAIL):
        os.environ[SWITCH_ENV] = way
        chosen = containment()
        if chosen.kind == way:
            out.append(way)
        else:
            print(f"{way}: not available here ({chosen.reason})")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    chosen = ways()
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        jail = Jail(ro=(cwd,))
        for name, argv in (("/bin/true", ["/bin/true"]), ("python -c print", [sys.executable, "-c", "print('x')"])):
            got: dict[str, list[tuple[float, float]]] = {way: [] for way in chosen}
            for i in range(args.rounds):
                for way in chosen[i % len(chosen):] + chosen[:i % len(chosen)]:
                    got[way].append(one(way, argv, jail, cwd))
            med = {way: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for way, v in got.items()}
            for way in chosen:
                wall, cpu = med[way]
                line = f"{name if way == PLAIN else '':16s} {way:6s} wall {wall:6.1f} ms  cpu {cpu:6.2f} ms"
                if way != PLAIN:
                    line += (f"   cost per turn: wall {wall - med[PLAIN][0]:+.1f} ms, "
                             f"cpu {cpu - med[PLAIN][1]:+.2f} ms")
                print(line)
            print(f"{'':16s} (medians of {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
