"""The few statistics the loss layer needs, written out so each can be checked by hand.

Sums use ``math.fsum`` (exactly rounded), so a result does not depend on the order of the
units. Spreads below 1e-12 are rounding noise and reported as 0.
"""
from __future__ import annotations

import math
from operator import mul
from typing import Sequence

EPS = 1e-12


def snap(value: float | None) -> float | None:
    """0 for a spread that is only rounding noise."""
    if value is None:
        return None
    return 0.0 if abs(value) < EPS else value


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sample_variance(values: Sequence[float]) -> float | None:
    """Variance with n − 1 in the denominator; None below two values."""
    n = len(values)
    if n < 2:
        return None
    m = mean(values)
    d = [x - m for x in values]
    return math.fsum(map(mul, d, d)) / (n - 1)


def sample_sd(values: Sequence[float]) -> float | None:
    var = sample_variance(values)
    return None if var is None else snap(math.sqrt(var))


def squares_around_mean(values: Sequence[float]) -> tuple[float, float]:
    """(mean, Σ (x − mean)²) of one unit's repeats."""
    m = mean(values)
    return m, math.fsum((x - m) * (x - m) for x in values)


def pooled_sd(sum_squares: float, dof: int) -> float | None:
    """sqrt(Σ_u Σ_r (x_ur − m_u)² / Σ_u (k_u − 1)); None without a unit of two or more repeats."""
    if dof <= 0:
        return None
    return snap(math.sqrt(sum_squares / dof))


def z_critical(k: int) -> float:
    """The critical value for k compared cells: 2 + ln(k)/2."""
    if k < 1:
        raise ValueError("k must be at least 1")
    return 2.0 + math.log(k) / 2.0
