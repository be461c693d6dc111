"""What preflight says of the blind panel: whether it runs, and which model-judged categories it is asked."""
from __future__ import annotations

from ..config.target import TargetConfig


def undecidable_attacks(config: TargetConfig, cases) -> list[str]:
    """The adversarial cases whose attack no rule can decide (no refusal patterns, markers or canary for it):
    the only ones a blind panel is asked an attack question about."""
    leaks = {c.leak for c in config.canaries}
    out = []
    for case in cases:
        attack = case.attack if case.adversarial else None
        if (attack == "guardrail_bypass" and not config.refusal_patterns) or (attack == "injection" and not case.markers) \
                or (attack in ("session_data", "secret") and attack not in leaks):
            out.append(case.id)
    return out


def panel_info(catalog, config: TargetConfig | None = None, cases=None) -> dict:
    """Whether the configured catalog has model-judged categories, i.e. whether a blind panel runs, and which of
    them it is asked about: a category of attack codes only when some selected attack is left to a judge."""
    judged = [c.id for c in catalog.categories if c.type == "model_judged"]
    attacks = [c.id for c in catalog.categories if c.type == "model_judged" and c.codes
               and all(code.startswith("adversarial.") for code in c.codes)]
    left = undecidable_attacks(config, cases) if config is not None and cases is not None else None
    idle = attacks if left == [] else []
    asked = [c for c in judged if c not in idle]
    if asked:
        line = (f"the panel runs: catalog {catalog.version} has model-judged categories ({', '.join(asked)}); "
                "a blind panel of three judges answers them before any verdict is recorded")
    elif judged:
        line = f"no panel: catalog {catalog.version}'s model-judged categories are asked of no unit"
    else:
        line = (f"no panel: catalog {catalog.version} has no model-judged category; you answer the open questions "
                "yourself")
    if idle:
        line += (f"; {', '.join(idle)} is asked of no unit: a rule decides every selected attack (refusal "
                 "patterns, markers, canaries), so the loss layer has no model-judged answers to cover there")
    return {"runs": bool(asked), "model_judged": asked, "not_asked": idle, "line": line}
