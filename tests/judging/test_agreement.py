"""Percent agreement, Fleiss' kappa and rater variance against values worked out by hand."""
from fractions import Fraction

import pytest
from obai_e2e.judge.panel.agreement import (
    fleiss,
    pair_variance,
    pairwise,
    rater_variance,
)

# Worked example: 4 items, 3 raters, categories c(omplete), i(ncomplete), a(bstain).
#
#   item  ratings   n_c n_i n_a  Σn²   P_i = (Σn² − 3) / (3·2)
#   1     c c c      3   0   0    9    6/6 = 1
#   2     c c i      2   1   0    5    2/6 = 1/3
#   3     i i i      0   3   0    9    1
#   4     c i a      1   1   1    3    0
#   P̄ = (1 + 1/3 + 1 + 0) / 4 = 7/12
#   totals c 6, i 5, a 1 of 12 → p = 1/2, 5/12, 1/12
#   P̄e = 1/4 + 25/144 + 1/144 = 62/144 = 31/72
#   κ = (7/12 − 31/72) / (1 − 31/72) = (11/72) / (41/72) = 11/41
WORKED = [["c", "c", "c"], ["c", "c", "i"], ["i", "i", "i"], ["c", "i", "a"]]


def test_fleiss_worked_example():
    f = fleiss(WORKED)
    assert (f.items, f.raters) == (4, 3)
    assert f.percent == Fraction(7, 12)
    assert f.chance == Fraction(31, 72)
    assert f.kappa == Fraction(11, 41)
    assert float(f.kappa) == pytest.approx(0.268292682)


def test_fleiss_degenerate_cases():
    same = fleiss([["c", "c", "c"], ["c", "c", "c"]])
    assert same.percent == 1 and same.chance == 1 and same.kappa is None  # undefined, not 1 or 0
    assert fleiss([]).kappa is None
    # Two raters who always disagree on a balanced set: κ = −1.
    assert fleiss([["c", "i"], ["i", "c"]]).kappa == -1
    with pytest.raises(ValueError):
        fleiss([["c", "c"], ["c"]])


def test_rater_variance_two_raters():
    # a and b over m = 4 units: Σ(a − b)² = 0 + 1 + 1 + 0 = 2 → σ_r² = 2 / (2·4) = 1/4.
    a, b = [1, 0, 1, 0], [1, 1, 0, 0]
    assert pair_variance(a, b) == (Fraction(1, 4), 4)
    # The mean sample variance (ddof 1) over units is the same number for two raters.
    assert rater_variance(list(zip(a, b))) == (Fraction(1, 4), 4)
    # Units missing one rating are left out: m counts only doubly rated units.
    assert pair_variance([1, 0, None], [0, 0, 1]) == (Fraction(1, 4), 2)


def test_rater_variance_three_raters():
    # [1,1,0]: mean 2/3, squared deviations 1/9 + 1/9 + 4/9 = 2/3, / (3 − 1) → 1/3
    # [0,0,0]: 0
    # [1,0,None]: two ratings left → (1 − 0)² / 2 = 1/2
    # [1,None,None]: one rating, not counted
    # mean over the 3 counted units: (1/3 + 0 + 1/2) / 3 = 5/18
    units = [[1, 1, 0], [0, 0, 0], [1, 0, None], [1, None, None]]
    assert rater_variance(units) == (Fraction(5, 18), 3)
    pairs = pairwise({"J1": [1, 0, 1, 1], "J2": [1, 0, 0, None], "J3": [0, 0, None, None]})
    assert pairs["J1|J2"] == {"sigma_r2": 1 / 6, "m": 3}
    assert pairs["J1|J3"] == {"sigma_r2": 0.25, "m": 2}
    assert pairs["J2|J3"] == {"sigma_r2": 0.25, "m": 2}
    assert rater_variance([[None, None, None]]) == (None, 0)
