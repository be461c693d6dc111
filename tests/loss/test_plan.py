"""The plan: exact n_min, the bundled plan and E2E-PLAN.md, and bad plans refused with a location."""
from fractions import Fraction

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.loss.plan import load_plan, n_min, render_plan_md, write_plan_md

from .helpers import plan


@pytest.mark.parametrize("s,mde,expected", [
    (0.3, 0.05, 576),     # the seed's "≈58" is a slip: 16·0.09/0.0025 = 576
    (0.095, 0.05, 58),    # 57.76 → 58
    (0.1, 0.02, 400),     # float arithmetic gives 400.00000000000006 → 401
    (0.05, 0.01, 400),    # float arithmetic gives 400.00000000000006 → 401
    (0, 0.05, 2),         # floored at 2
    ("0.1", "0.02", 400),
    (Fraction(1, 10), Fraction(1, 50), 400),
    (0.02, 0.05, 3),      # 2.56 → 3
])
def test_n_min(s, mde, expected):
    assert n_min(s, mde) == expected


def test_float_arithmetic_would_be_off_by_one():
    import math
    assert math.ceil(16 * 0.1 ** 2 / 0.02 ** 2) == 401
    assert math.ceil(16 * 0.05 ** 2 / 0.01 ** 2) == 401


def test_n_min_refuses_nonpositive_mde():
    with pytest.raises(ValueError):
        n_min(0.3, 0)


def test_bundled_plan():
    p = load_plan()
    assert p.mde == 0.35 and p.pool == "max"
    assert len(p.hops) >= 6 and len({h.id for h in p.hops}) == len(p.hops)
    keys = [x.key for x in p.partitions]
    assert "intent=price_lookup,provenance=synthetic" in keys and "provenance=korpus" in keys
    # no pilot estimates in the bundled plan: s = 0.3 everywhere, 16 · 0.09 / 0.1225 = 11.76 → 12
    assert all(not x.s_from_pilot and x.n_min == 12 for x in p.partitions)
    assert p.budget == 12 * len(p.partitions)
    assert p.partitions[0].weight == pytest.approx(0.3)


def test_plan_file_decimals_are_exact(tmp_path):
    p = plan(tmp_path, "mde: 0.02\npartitions:\n  - labels: {intent: a}\n    frequency: 0.1\n    damage: 3\n    s: 0.1\n"
                       "  - labels: {intent: b}\n    frequency: 0.7\n    damage: 1\n")
    assert [x.n_min for x in p.partitions] == [400, 3600]
    assert p.partitions[0].weight_exact == Fraction(3, 10)
    assert p.partitions[0].labels == {"intent": "a", "provenance": "synthetic"}
    assert p.partitions[0].s_from_pilot and not p.partitions[1].s_from_pilot
    assert p.budget == 4000


def test_plan_md(tmp_path):
    p = plan(tmp_path, "mde: 0.05\npartitions:\n  - labels: {intent: a}\n    frequency: 0.5\n    damage: 2\n    s: 0.095\n"
                       "  - labels: {intent: b, provenance: korpus}\n    frequency: 0.5\n    damage: 1\n")
    text = render_plan_md(p)
    assert "We want to detect loss deltas of 0.05 or more reliably" in text
    assert "| harness-cli | harness | cli | exit code | exits 0 | one timeout | always times out |" in text
    assert "| intent=a,provenance=synthetic | 0.5 | 2 | 1 | 0.095 | pilot | 58 |" in text
    assert "| intent=b,provenance=korpus | 0.5 | 1 | 0.5 | 0.3 | default | 576 |" in text
    assert "Sample budget: Σ n_min = 634 units" in text
    assert "arithmetic slip" in text and "= 576" in text
    out = write_plan_md(p, tmp_path / "E2E-PLAN.md")
    assert out.read_text(encoding="utf-8") == text
    assert render_plan_md(p) == text  # deterministic


def bad(tmp_path, body: str, match: str) -> str:
    with pytest.raises(ConfigError) as err:
        plan(tmp_path, body)
    msg = str(err.value)
    assert str(tmp_path / "plan.yaml") in msg and match in msg, msg
    return msg


def test_bad_plans(tmp_path):
    one = "partitions:\n  - labels: {intent: a}\n    frequency: 0.5\n    damage: 1\n"
    bad(tmp_path, "partitions:\n  - labels: {intent: a}\n    damage: 1\n", "'frequency' is required")
    bad(tmp_path, "mde: 0\n" + one, "field /mde")
    bad(tmp_path, one.replace("0.5", "-1"), "field /partitions/0/frequency")
    bad(tmp_path, one.replace("{intent: a}", "{intent: a, provenance: web}"),
        "field /partitions/0/labels/provenance: 'web' is not one of")
    bad(tmp_path, "partitions: []\n", "field /partitions")
    msg = bad(tmp_path, one + "  - labels: {channel: cli}\n    frequency: 0.5\n    damage: 1\n",
              "field /partitions/1/labels")
    assert "can hold the same units as /partitions/0" in msg
    bad(tmp_path, one + "  - labels: {intent: a}\n    frequency: 0.5\n    damage: 1\n", "the same labels as /partitions/0")
    hops = ("hops:\n" + "  - {id: h, from: a, to: b, signal: s, correct: c, flake: f, real_error: e}\n" * 2)
    bad(tmp_path, one + hops, "duplicate hop id 'h'")
    bad(tmp_path, one + "hops:\n  - {id: h, from: a, to: b, signal: s}\n", "'correct' is required")


def test_line_numbers_in_errors(tmp_path):
    msg = bad(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: x\n    damage: 1\n", "frequency")
    assert "plan.yaml:4:" in msg
