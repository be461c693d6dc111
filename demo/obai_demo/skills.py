"""Skills the hub loads, and the specialist tool each one brings."""
from __future__ import annotations

SKILL_TOOLS: dict[str, tuple[str, ...]] = {
    "market-data": ("market_data_analysis",),
    "fundamentals": ("fundamentals_analysis",),
    "strategy-backtest": ("strategy_analysis",),
    "prediction-markets": ("prediction_market_analysis",),
    "options": ("options_analysis",),
}

SKILL_OF: dict[str, str] = {tool: skill for skill, tools in SKILL_TOOLS.items() for tool in tools}


def skills_for(specialists: list[str]) -> list[str]:
    """Skills needed by ``specialists``, in the order the specialists come."""
    needed: list[str] = []
    for name in specialists:
        skill = SKILL_OF[name]
        if skill not in needed:
            needed.append(skill)
    return needed


def load(skill: str) -> dict:
    """What loading a skill reports: its name and the tools it makes available."""
    return {"loaded": skill, "tools": list(SKILL_TOOLS[skill])}
