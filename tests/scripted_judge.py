"""A scripted judge for tests: reads a judge bundle on stdin, prints a JSON answer.

It behaves like a careful judge that needs no model: every question of every packet gets
a choice, the first payload's span id as evidence (a packet without payloads: a quote of
its answer) and a one-sentence rationale. Which choice is decided by
``SCRIPTED_JUDGE_PLAN``, a JSON object ``{"<label>": {"<query substring>": "<choice>"}}``
keyed by the judge label in ``OBAI_JUDGE_LABEL``; the default choice is "complete" (and
"faithful" for the faithfulness question: a choice that is not one of a question's choices
gives its first). A packet that shows a fixed calibration item of the bundle's calibration
catalog (``SCRIPTED_JUDGE_CALIBRATION``, default ``catalogs/calibration.v1.json``; matched
by its query and answer) gets the item's gold choices, as a careful judge gives them,
unless the label's plan says ``"@fixed": "lenient"``: then it is judged like any other
packet (complete and faithful, the commonest way a judge goes wrong). No model is called.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

BLOCK = re.compile(r"^## Packet \d+ of \d+: \S+\n\n```json\n(.*?)\n```", re.S | re.M)
# The bundle's Questions section: each question's choices once (older bundles: in every packet).
CHOICES = re.compile(r"^## (\S+)\n\nChoices: (.*)\.$", re.M)
CALIBRATION = Path(__file__).resolve().parents[1] / "catalogs" / "calibration.v1.json"
FIXED_PLAN = "@fixed"


def fixed_items(path: Path | None = None) -> dict[tuple[str, str], dict]:
    """(query, final answer) → gold choices of every item of the calibration catalog."""
    path = Path(path or os.environ.get("SCRIPTED_JUDGE_CALIBRATION") or CALIBRATION)
    if not path.exists():
        return {}
    items = json.loads(path.read_text(encoding="utf-8"))["items"]
    return {(" ".join(i["query"].split()), " ".join(i["final_answer"].split())): i["gold"] for i in items}


def _key(packet: dict) -> tuple[str, str]:
    return " ".join(packet["query"].split()), " ".join((packet.get("final_answer") or "").split())


def answer(bundle: str, label: str, plan: dict, fixed: dict | None = None) -> dict:
    rules = plan.get(label, {})
    fixed = fixed_items() if fixed is None else fixed
    honest = rules.get(FIXED_PLAN, "gold") == "gold"
    listed = {feeds: text.split(", ") for feeds, text in CHOICES.findall(bundle)}
    out = []
    for block in BLOCK.findall(bundle):
        packet = json.loads(block)
        gold = fixed.get(_key(packet)) if honest else None
        choice = next((c for text, c in rules.items() if text != FIXED_PLAN and text.lower() in packet["query"].lower()),
                      "complete")
        spans = [p["span_id"] for p in packet.get("specialist_payloads", [])][:1]
        answers = []
        for q in packet["questions"]:
            if not q.get("applies", True):
                answers.append({"question": q["id"], "choice": None, "evidence": {"spans": [], "numbers": []},
                                "rationale": "The question does not apply to this packet."})
                continue
            choices = q.get("choices") or listed[q["feeds"]]
            pick = (gold or {}).get(q["feeds"]) or (choice if choice in choices else choices[0])
            evidence = {"spans": spans, "numbers": []}
            if not spans and pick != "abstain":  # no payload to cite (a refusal): quote the answer
                evidence["quotes"] = [" ".join((packet.get("final_answer") or packet["query"]).split())[:60]]
            answers.append({"question": q["id"], "choice": pick, "evidence": evidence,
                            "rationale": f"Scripted judge {label}: {pick} for this answer."})
        out.append({"packet_id": packet["packet_id"], "answers": answers})
    return {"packets": out}


def main() -> int:
    label = os.environ.get("OBAI_JUDGE_LABEL", "J1")
    plan = json.loads(os.environ.get("SCRIPTED_JUDGE_PLAN", "{}"))
    source = open(sys.argv[1], encoding="utf-8").read() if len(sys.argv) > 1 else sys.stdin.read()
    print(json.dumps(answer(source, label, plan)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
