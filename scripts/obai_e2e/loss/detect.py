"""What a cell can detect: the smallest true delta the listing rule finds with 80 % power.

A cell is listed when delta − z·se_delta > mde. With the observed delta normal around the
true delta δ with standard error se_delta, the chance of a listing is
Φ((δ − mde − z·se_delta) / se_delta); it reaches 80 % at

    δ_80 = mde + (z + z_0.8)·se_delta,   z_0.8 = Φ⁻¹(0.8) = 0.841621…

A cell below n_min is never listed, whatever δ is: it needs n_min − n more units first.
For one run alone (suite.json) the baseline is taken to be a like-for-like run of the same
size and spread, so se_delta = √2·se, and z is the critical value for the cells this run
could have compared.
"""
from __future__ import annotations

import math
from statistics import NormalDist

POWER = 0.8
POWER_Z = NormalDist().inv_cdf(POWER)
SQRT2 = math.sqrt(2.0)


def detectable_effect(mde: float, z: float, se_delta: float) -> float:
    """mde + (z + Φ⁻¹(0.8))·se_delta."""
    return mde + (z + POWER_Z) * se_delta


def needs_units(n: int, n_min: int) -> int:
    """Units a cell or partition lacks before it can be listed at all."""
    return max(0, n_min - n)


def fmt(value: float) -> str:
    return f"{value:.4f}"


def sentence(*, status: str, effects: dict[str, float] | None, needs: int | None,
             short_categories: dict | None = None, unassigned: bool = False, side: str = "") -> str:
    """The plain sentence per partition: "can detect regressions of routing ≥ X, output ≥ Y" (one figure per
    category it compares, none for the partition as a whole) or "needs N more units"."""
    if unassigned:
        return "not a partition of the plan: never compared"
    if status == "suppressed":
        return f"{side}abort rate above 10 %: nothing can be detected until the harness is fixed"
    if status == "unbewertbar":
        return f"{side}nothing could be scored"
    if needs:
        return f"{side}needs {needs} more unit{'s' if needs != 1 else ''}"
    if not effects:
        return f"{side}no category could be compared"
    text = "can detect regressions of " + ", ".join(f"{c} ≥ {fmt(e)}" for c, e in sorted(effects.items()))
    if short_categories:
        text += "; " + ", ".join(f"{c} needs {k} more unit{'s' if k != 1 else ''}"
                                 for c, k in sorted(short_categories.items()))
    return text
