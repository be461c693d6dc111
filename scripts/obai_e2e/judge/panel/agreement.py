"""Agreement between judges and rater variance, computed exactly (fractions).

Fleiss (1971), for N items each rated by the same n ≥ 2 raters into k categories, with
n_ij the number of raters who put item i into category j:

    P_i  = (Σ_j n_ij² − n) / (n(n − 1))     agreement on item i = share of agreeing rater pairs
    P̄    = (1/N) Σ_i P_i                    percent agreement (mean pairwise agreement)
    p_j  = (1/(N n)) Σ_i n_ij               share of all ratings in category j
    P̄_e  = Σ_j p_j²                          agreement expected by chance
    κ    = (P̄ − P̄_e) / (1 − P̄_e)           undefined (None) when P̄_e = 1

Rater variance of per-judge losses (0/1): for a pair of raters over m units,
σ_r² = Σ (a − b)² / (2m); for more raters, the mean over units of the sample variance
(ddof 1) of the unit's ratings — for two raters the two are the same number.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Sequence


@dataclass(frozen=True)
class Fleiss:
    """Percent agreement and Fleiss' κ over items rated by every rater."""

    items: int
    raters: int
    percent: Fraction | None
    chance: Fraction | None
    kappa: Fraction | None


def fleiss(items: Sequence[Sequence[str]]) -> Fleiss:
    """``items``: for each item, the category each rater chose (same number of raters per item)."""
    items = [list(i) for i in items]
    if not items:
        return Fleiss(0, 0, None, None, None)
    n = len(items[0])
    if n < 2 or any(len(i) != n for i in items):
        raise ValueError("every item needs the same number (≥ 2) of ratings")
    N = len(items)
    totals: Counter = Counter()
    p_sum = Fraction(0)
    for ratings in items:
        counts = Counter(ratings)
        totals.update(counts)
        p_sum += Fraction(sum(c * c for c in counts.values()) - n, n * (n - 1))
    p_bar = p_sum / N
    p_e = sum((Fraction(c, N * n) ** 2 for c in totals.values()), Fraction(0))
    kappa = None if p_e == 1 else (p_bar - p_e) / (1 - p_e)
    return Fleiss(N, n, p_bar, p_e, kappa)


def sample_variance(values: Sequence[int | Fraction]) -> Fraction:
    vals = [Fraction(v) for v in values]
    mean = sum(vals, Fraction(0)) / len(vals)
    return sum(((v - mean) ** 2 for v in vals), Fraction(0)) / (len(vals) - 1)


def rater_variance(units: Sequence[Sequence[int | None]]) -> tuple[Fraction | None, int]:
    """(mean over units of the sample variance of their non-null ratings, units with ≥ 2 ratings)."""
    usable = [[r for r in u if r is not None] for u in units]
    usable = [u for u in usable if len(u) >= 2]
    if not usable:
        return None, 0
    return sum((sample_variance(u) for u in usable), Fraction(0)) / len(usable), len(usable)


def pair_variance(a: Sequence[int | None], b: Sequence[int | None]) -> tuple[Fraction | None, int]:
    """σ_r² = Σ(a − b)² / (2m) over the m units both raters rated."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not pairs:
        return None, 0
    return Fraction(sum((x - y) ** 2 for x, y in pairs), 2 * len(pairs)), len(pairs)


def pairwise(ratings: dict[str, Sequence[int | None]]) -> dict[str, dict]:
    """σ_r² for every pair of raters, keyed ``"A|B"``."""
    out = {}
    for x, y in combinations(sorted(ratings), 2):
        value, m = pair_variance(ratings[x], ratings[y])
        out[f"{x}|{y}"] = {"sigma_r2": as_float(value), "m": m}
    return out


def as_float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)
