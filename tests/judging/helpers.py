"""Building judging rounds from the real run directory and synthetic judge replies."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from obai_e2e.judge.panel.packets import generate
from obai_e2e.judge.panel.rounds import Round, load_round
from obai_e2e.run.plan import plan

# A real run of the demo target (MD1, S2, A1, O2, R1), kept with the tests as data.
REAL_RUN = Path(__file__).resolve().parent / "data" / "demo-run"

# A catalog with a model_judged category that no code question covers, so it is sampled.
EXTRA_CATALOG = {
    "version": "test",
    "categories": [
        {"id": "answer_completeness", "weight": 0.15, "type": "model_judged", "max": 1,
         "description": "the answer addresses what was actually asked", "codes": ["hub.incomplete_answer"]},
        {"id": "answer_clarity", "weight": 0.10, "type": "model_judged", "max": 1,
         "description": "the answer states its figures plainly, with units and dates", "codes": []},
        {"id": "routing_skills", "weight": 0.75, "type": "deterministic", "max": 1, "codes": ["routing.skill_missing"]},
    ],
}


def copy_run(dest: Path) -> Path:
    run = dest / "run"
    shutil.copytree(REAL_RUN, run, ignore=shutil.ignore_patterns("judging", ".runner*"))
    return run


def run_units(run: Path, cases) -> list:
    """The units of a run directory, resolved through its plan."""
    return plan(run, cases).units


def make_round(run: Path, config, cases, name: str = "r1", **kw) -> Round:
    generate(run, config, run_units(run, cases), round_name=name, **kw)
    return load_round(run, name)


def pid_of(rnd: Round, unit_id: str) -> str:
    return next(p for p, u in rnd.mapping.items() if u == unit_id)


def answer(q: dict, choice, packet: dict, *, tag: str = "", spans=None, numbers=None) -> dict:
    decisive = choice not in (None, "abstain")
    first_span = [packet["specialist_payloads"][0]["span_id"]] if packet["specialist_payloads"] else []
    evidence = {"spans": spans if spans is not None else (first_span if decisive else []),
                "numbers": numbers if numbers is not None else []}
    if decisive and spans is None and numbers is None and not first_span:  # no payload: quote the answer
        evidence["quotes"] = [" ".join(packet["final_answer"].split())[:60]]
    return {"question": q["id"], "choice": choice, "evidence": evidence,
            "rationale": f"{tag} the answer covers what was asked." if decisive or tag else ""}


# A completeness choice → the faithfulness choice a judge of the same mind gives with it.
FAITHFUL_WITH = {"complete": "faithful", "incomplete": "faithful", "abstain": "abstain"}


def entry(rnd: Round, unit_id: str, choice, *, tag: str = "", category_choice: str = "meets",
          faithfulness: str | None = None, **kw) -> dict:
    """Every applicable completeness question gets ``choice``, faithfulness ``faithfulness`` (default: faithful,
    or abstain with an abstention), every other code question ``choice`` and every category question
    ``category_choice``. ``unit_id`` may also be a packet id (a fixed calibration item)."""
    pid = unit_id if unit_id in rnd.packets else pid_of(rnd, unit_id)
    packet = rnd.packets[pid]

    def pick(q):
        if not q["applies"]:
            return None
        if q["feeds"] == "hub.unfaithful_answer":
            return faithfulness or FAITHFUL_WITH.get(choice, choice)
        return choice if q["feeds"].startswith(("hub.", "adversarial.")) else category_choice
    return {"packet_id": pid, "answers": [answer(q, pick(q), packet, tag=tag, **kw) for q in packet["questions"]]}


def gold_entry(rnd: Round, pid: str, *, tag: str = "", flip: tuple[str, ...] = ()) -> dict:
    """A fixed item's entry with its gold choice on every question (the other choice on the questions in
    ``flip``)."""
    packet, gold = rnd.packets[pid], rnd.fixed[pid]["gold"]
    other = {"complete": "incomplete", "incomplete": "complete", "faithful": "unfaithful", "unfaithful": "faithful"}

    def pick(q):
        if not q["applies"]:
            return None
        g = gold.get(q["feeds"], "meets")
        return other.get(g, g) if q["feeds"] in flip else g
    return {"packet_id": pid, "answers": [answer(q, pick(q), packet, tag=tag) for q in packet["questions"]]}


def reply(rnd: Round, choices: dict[str, str | None], *, tag: str = "", fixed: bool = True) -> str:
    """A judge's raw reply: one choice per unit (every question of its packet), and (``fixed``) the gold choice
    on every fixed calibration item, as a careful judge gives it."""
    packets = [entry(rnd, uid, c, tag=tag) for uid, c in choices.items()]
    if fixed:
        packets += [gold_entry(rnd, pid, tag=tag) for pid in sorted(rnd.fixed)]
    return json.dumps({"packets": packets}, indent=1)


def label_run(run: Path, gold: dict[str, dict[str, str]], *, unlabelled: tuple[str, ...] = ()) -> Path:
    """Point the copied run at a small cases file of its own: its five cases, ``gold`` as their
    ``expected_judgment`` (case id → {question: choice}). Returns the file."""
    import yaml

    from obai_e2e.config.cases import default_cases_path

    meta = json.loads((run / "run.json").read_text())
    wanted = set(meta["filters"]["ids"]) | set(unlabelled)
    data = yaml.safe_load(default_cases_path().read_text())
    cases = [dict(c) for c in data["cases"] if c["id"] in wanted]
    for c in cases:
        c.pop("expected_judgment", None)
        if c["id"] in gold:
            c["expected_judgment"] = gold[c["id"]]
    path = run.parent / "labelled-cases.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False))
    meta["cases_file"] = str(path)
    (run / "run.json").write_text(json.dumps(meta, indent=1))
    return path
