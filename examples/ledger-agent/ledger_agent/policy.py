"""The policy check in front of every turn: finance questions only, derivatives for pro accounts."""
from __future__ import annotations

from dataclasses import dataclass

OFF_TOPIC_REPLY = "I can only discuss personal finance and markets."
TIER_REPLY = "Options analysis needs a pro account. I can only discuss quotes and company financials here."


@dataclass(frozen=True)
class Decision:
    """What the policy decided, and why."""

    decision: str  # "allow" | "deny"
    policy: str    # "finance-only" | "tier"
    reason: str

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def as_output(self) -> dict:
        return {"decision": self.decision, "policy": self.policy, "reason": self.reason}


def check(is_finance: bool, wants_derivs: bool, tier: str) -> Decision:
    if not is_finance:
        return Decision("deny", "finance-only", "not a finance question")
    if wants_derivs and tier != "pro":
        return Decision("deny", "tier", f"derivatives are not enabled for {tier} accounts")
    return Decision("allow", "finance-only", "finance question")


def refusal_text(decision: Decision) -> str:
    return TIER_REPLY if decision.policy == "tier" else OFF_TOPIC_REPLY
