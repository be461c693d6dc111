"""Keep a round that real model judges answered, so the tests replay real judges.

    uv run python tests/recorded/record_judges.py --run-dir RUN_DIR [--round r1] [--name NAME]

RUN_DIR is a run whose panel round was answered by fresh model judges (the chat flow's step 4:
three sub-agents, each given only its printed prompt) and aggregated with ``--collect``. The
round's packets, stored raw replies, round record and aggregate are copied under
``tests/recorded/judges/NAME/`` with the run's run.json and the cases file it was judged
against, as ``cases/cases.yaml`` (the gold labels are read from it only after the replies are
stored; run.json names it relative to the bundle, so a test sets OBAI_E2E_HOME to the copy). The hand-over
record is left out: it names folders of the machine it was played on.
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
    agg = json.loads((src / "aggregate.json").read_text(encoding="utf-8"))
    return {"out": str(out), "units": len(agg["units"]), "judges": agg["judges"]}


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
