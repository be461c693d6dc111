"""Keep a round that real model judges answered, so the tests replay real judges.

    uv run python tests/recorded/record_judges.py --run-dir RUN_DIR [--round r1] [--name NAME]

RUN_DIR is a run of the default suite (its clean cases and its judged-fault cases JC1-JC4 and
JF1-JF4) whose panel round was answered by fresh model judges (the chat flow's step 4: three
sub-agents, each given only its printed prompt) and aggregated with ``--collect``; the round
holds the fixed calibration items too. The round's packets, stored raw replies, round record,
id map (``mapping.json``: which packets are fixed items, with their gold choices) and aggregate
are copied under ``tests/recorded/judges/NAME/`` with the run's run.json, its copy of its inputs
(``inputs/``) and the cases file it was judged against, as ``cases/cases.yaml`` (the expectations are read from it only after the
replies are stored; run.json names it relative to the bundle, so a test sets OBAI_E2E_HOME to
the copy). The hand-over record is left out: it names folders of the machine it was played on.

How a round is played and kept (from the repository root; <MODEL>: the sub-agents' model id):

    export OBAI_E2E_RUNS=/tmp/real-judges-runs OBAI_TRACE_STORE_DIR=/tmp/real-judges-store
    uv run obai-e2e run --jobs 2                  # the default suite, headless: prints the run directory D
    uv run obai-e2e judge-packets --run-dir D --round r1
    # start three fresh sub-agents at once, each with one printed prompt of `judges` as its whole prompt
    uv run obai-e2e aggregate-judges --run-dir D --round r1 --collect --model <MODEL>
    uv run python tests/recorded/record_judges.py --run-dir D --round r1
    uv run obai-e2e traces stop
    uv run pytest -n 0 tests/judging/test_real_judges.py
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KEEP = ("round.json", "mapping.json", "aggregate.json", "bundle.md", "packets", "responses")


def record(run_dir: Path, round_name: str, out: Path) -> dict:
    src = run_dir / "judging" / round_name
    if not (src / "aggregate.json").is_file():
        raise SystemExit(f"{src}: no aggregate.json; collect and aggregate the round first")
    if out.exists():
        shutil.rmtree(out)
    (out / "judging" / round_name).mkdir(parents=True)
    for name in KEEP:
        s, d = src / name, out / "judging" / round_name / name
        shutil.copytree(s, d) if s.is_dir() else shutil.copy2(s, d)
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    cases = Path(meta["cases_file"])
    cases = cases if cases.is_absolute() else REPO / cases
    (out / "cases").mkdir()
    shutil.copy2(cases, out / "cases" / "cases.yaml")  # the tests read it with OBAI_E2E_HOME at the copy
    shutil.copy2(run_dir / "run.json", out / "run.json")
    if (run_dir / "inputs").is_dir():  # the run's own copy of its inputs, which later stages read
        shutil.copytree(run_dir / "inputs", out / "inputs")
    agg = json.loads((src / "aggregate.json").read_text(encoding="utf-8"))
    fixed = (agg.get("calibration") or {}).get("items", 0)
    if not fixed:
        say = f"{src}: the round holds no fixed calibration items; the tests grade the judges on them"
        print(say, file=sys.stderr)
    return {"out": str(out), "units": len(agg["units"]), "fixed_items": fixed, "judges": agg["judges"],
            "majority_worst_recall": ((agg.get("calibration") or {}).get("majority") or {}).get("worst_recall")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--round", default="r1")
    p.add_argument("--name", default="default-r1")
    a = p.parse_args(argv)
    print(json.dumps(record(a.run_dir, a.round, HERE / "judges" / a.name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
