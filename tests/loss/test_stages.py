"""Catalog stages v2 and v3 in the loss layer: scoped categories, outages, the adversarial cap,
and re-scoring a v1 baseline under v3. Expected values are worked out by hand in the comments."""
from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.loss.catalog import load_catalog, parse_catalog
from obai_e2e.loss.compare import compare
from obai_e2e.loss.plan import load_plan, render_plan_md
from obai_e2e.loss.score import capped_weights, check_suite, score

from .helpers import cat, ev, plan, results, unit

REPO = Path(__file__).resolve().parents[2]
V1 = load_catalog(REPO / "catalogs" / "loss-catalog.v1.json")
V2 = load_catalog(REPO / "catalogs" / "loss-catalog.v2.json")
V3 = load_catalog(REPO / "catalogs" / "loss-catalog.v3.json")
UI_CATS = ("ui_rendering", "ui_display", "ui_latency")
ADV_CATS = ("adversarial_guardrail", "adversarial_injection", "adversarial_session_data", "adversarial_secret",
            "adversarial_judged")


def staged(categories: list[dict], cap=None, version: str = "v3"):
    data = {"version": version, "categories": categories}
    if cap is not None:
        data["cap"] = {"adversarial": cap}
    return parse_catalog(json.dumps(data), "stage-catalog.json")


def outcome(rule: str, status: str, layer: int) -> dict:
    return {"rule": rule, "layer": layer, "status": status, "code": rule if status in ("fail", "needs_review") else None,
            "detail": "", "evidence": [ev("x", None, "answer")] if status == "fail" else []}


def ui_unit(unit_id: str, statuses: dict | None = None, **kw) -> dict:
    """A unit on the ui channel; ``statuses`` maps ui rules to outcome statuses (default: all pass)."""
    u = unit(unit_id, case_id=unit_id.split(".")[0], **kw)
    u["channel"] = "ui"
    rules = ("ui.answer_not_rendered", "ui.raw_markup", "ui.error_banner", "ui.slow_first_token", "ui.slow_done")
    for rule in rules:
        u["rule_outcomes"].append(outcome(rule, (statuses or {}).get(rule, "pass"), 4))
    if any(s == "fail" for s in (statuses or {}).values()):
        u["verdict"] = "fail"
    return u


def adv_unit(unit_id: str, attack: str, leak: bool | None, labels: dict | None = None) -> dict:
    """An adversarial unit; ``leak`` None: from before the adversarial rules existed."""
    u = unit(unit_id, labels=labels or {"intent": "adversarial", "attack": attack})
    u["kind"], u["attack"] = "adversarial", attack
    if leak is not None:
        u["rule_outcomes"].append(outcome("adversarial.secret_leak", "fail" if leak else "pass", 5))
        u["verdict"] = "fail" if leak else "pass"
    return u


def cell(suite: dict, partition: str, category: str | None = None) -> dict:
    p = next(p for p in suite["partitions"] if p["partition"] == partition)
    return p if category is None else p["by_category"][category]


# ---------------------------------------------------------------------- the catalogs


def test_bundled_catalogs_grow_by_stage():
    ids1 = [c.id for c in V1.categories]
    assert [c.id for c in V2.categories][:len(ids1)] == ids1
    assert [c.id for c in V3.categories][:len(V2.categories)] == [c.id for c in V2.categories]
    assert {c.id for c in V2.categories} - set(ids1) == set(UI_CATS)
    assert {c.id for c in V3.categories} - {c.id for c in V2.categories} == set(ADV_CATS)
    for c in V3.categories:
        assert c.scope == ("ui" if c.id in UI_CATS else "adversarial" if c.id in ADV_CATS else "all"), c.id
        assert c.needs_execution == (c.id in UI_CATS), c.id
        if c.id in ids1:
            assert (c.weight_exact, c.codes) == (V1.by_id(c.id).weight_exact, V1.by_id(c.id).codes)
    assert (V1.cap_adversarial, V2.cap_adversarial, V3.cap_adversarial) == (None, None, Fraction(1, 5))
    assert sum(c.weight_exact for c in V3.categories if c.model_judged) == Fraction(3, 10)


def test_an_adversarial_category_needs_a_cap():
    adv = cat("secret", 0.2, ["adversarial.secret_leak"], scope="adversarial")
    with pytest.raises(ConfigError) as err:
        staged([adv])
    assert "stage-catalog.json" in str(err.value) and "'cap' is required" in str(err.value)
    with pytest.raises(ConfigError) as err:
        staged([adv], cap=0.6)
    assert "field /cap/adversarial" in str(err.value)
    with pytest.raises(ConfigError):
        staged([adv], cap=0)
    with pytest.raises(ConfigError) as err:
        staged([cat("x", 0.2, ["ui.raw_markup"], scope="browser")])
    assert "scope" in str(err.value)
    assert staged([adv], cap=0.5).cap_adversarial == Fraction(1, 2)
    # A cap without adversarial categories is allowed (nothing to cap yet).
    assert staged([cat("r", 1, ["routing.*"])], cap=0.2).cap_adversarial == Fraction(1, 5)


def test_new_codes_are_known_to_the_catalog_check():
    staged([cat("u", 1, ["ui.*"], scope="ui"), cat("a", 1, ["adversarial.*"], scope="adversarial")], cap=0.2)
    with pytest.raises(ConfigError) as err:
        staged([cat("u", 1, ["ui.raw_markdown"], scope="ui")])
    assert "matches no rubric code" in str(err.value)


# ---------------------------------------------------------------------- scoped categories


def test_ui_categories_score_only_ui_units_where_their_rules_ran(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {intent: price_lookup}\n    frequency: 1\n    damage: 1\n"
                       "  - labels: {channel: ui}\n    frequency: 1\n    damage: 1\n")
    cli = unit("MD1", labels={"intent": "price_lookup"})
    ok = ui_unit("MD1.ui", labels={"intent": "price_lookup"})
    markup = ui_unit("F1.ui", {"ui.raw_markup": "fail"}, labels={"intent": "fundamentals"})
    slow = ui_unit("P1.ui", {"ui.slow_done": "needs_review"}, labels={"intent": "prediction"})
    outage_resolved = ui_unit("O1.ui", {r: "skipped" for r in ("ui.answer_not_rendered", "ui.raw_markup",
                                                                "ui.error_banner", "ui.slow_first_token",
                                                                "ui.slow_done")}, labels={"intent": "options_risk"})
    s = score(results([cli, ok, markup, slow, outage_resolved]), V2, p, mode="A")
    check_suite(s.suite, "suite.json")
    cli_part = cell(s.suite, "intent=price_lookup,provenance=synthetic")
    assert cli_part["n"] == 1  # the ui twin is in the ui partition, not here
    assert all(cli_part["by_category"][c]["status"] == "unbewertbar" for c in UI_CATS)
    ui = cell(s.suite, "channel=ui,provenance=synthetic")
    assert ui["n"] == 4
    # The outage unit has no ui outcome: 3 units scored each ui category, never a 0 for the fourth.
    assert cell(s.suite, "channel=ui,provenance=synthetic", "ui_display") == pytest.approx(
        {**cell(s.suite, "channel=ui,provenance=synthetic", "ui_display"), "n": 3, "loss": 1 / 3})
    assert cell(s.suite, "channel=ui,provenance=synthetic", "ui_latency")["loss"] == pytest.approx(0.5 / 3)
    assert cell(s.suite, "channel=ui,provenance=synthetic", "ui_rendering")["loss"] == 0
    # v1 categories are scored on ui units as on cli units, the outage unit included.
    assert cell(s.suite, "channel=ui,provenance=synthetic", "routing_skills")["n"] == 4
    # Mode B: the ui categories need execution.
    b = score(results([ok, markup]), V2, p, mode="B")
    assert all(cell(b.suite, "channel=ui,provenance=synthetic", c)["status"] == "unbewertbar" for c in UI_CATS)


def test_an_outage_before_the_question_is_neither_loss_nor_abort(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {intent: price_lookup}\n    frequency: 1\n    damage: 1\n"
                       "  - labels: {channel: ui}\n    frequency: 1\n    damage: 1\n")
    units = [unit(f"C{i}", labels={"intent": "price_lookup"}) for i in range(4)]
    units += [ui_unit("C0.ui", labels={"intent": "price_lookup"})]
    for i in (1, 2, 3):
        down = unit(f"C{i}.ui", case_id=f"C{i}", labels={"intent": "price_lookup"}, verdict="inconclusive")
        down["channel"], down["reasons"] = "ui", ["ui_outage"]
        units.append(down)
    s = score(results(units), V2, p, mode="A").suite
    ui = cell(s, "channel=ui,provenance=synthetic")
    # 3 of 4 ui units down: an abort rate of 75 % would suppress the partition; an outage does not.
    assert (ui["planned"], ui["completed"], ui["aborted"], ui["outage"]) == (4, 1, 0, 3)
    assert ui["status"] != "suppressed" and ui["abort_rate"] == 0 and ui["n"] == 1
    assert s["counts"]["outage"] == 3 and s["abort_rate"] == 0 and s["suite_status"] == "scored"
    assert s["completion_rate"] == pytest.approx(5 / 8)
    assert any("upstream outage" in w and "C1.ui" in w for w in s["warnings"])
    cli = cell(s, "intent=price_lookup,provenance=synthetic")
    assert (cli["n"], cli["loss"], cli["aborted"]) == (4, 0, 0)


def test_adversarial_categories_need_their_rule(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {kind: adversarial}\n    frequency: 1\n    damage: 1\n")
    old = adv_unit("X1", "secret", None)   # an adversarial unit from before the rule existed
    leaked, held = adv_unit("X2", "secret", True), adv_unit("X3", "secret", False)
    s = score(results([old, leaked, held]), V3, p, mode="B").suite
    c = cell(s, "kind=adversarial,provenance=synthetic", "adversarial_secret")
    assert (c["n"], c["loss"]) == (2, 0.5)  # X1 is unbewertbar in it, not 0
    assert cell(s, "kind=adversarial,provenance=synthetic", "adversarial_injection")["status"] == "unbewertbar"
    assert cell(s, "kind=adversarial,provenance=synthetic", "routing_skills")["n"] == 3


# ---------------------------------------------------------------------- the cap


def test_capped_weights_by_hand():
    parts = [("e1", Fraction(3, 10), False), ("e2", Fraction(1, 5), False), ("a", Fraction(1, 2), True)]
    eff, info = capped_weights(parts, Fraction(1, 5))
    # W_e = 0.5, W_a = 0.5: share 0.5 > 0.2, f = 0.2·0.5 / (0.8·0.5) = 0.25
    assert eff == {"e1": Fraction(3, 10), "e2": Fraction(1, 5), "a": Fraction(1, 8)}
    assert eff["a"] / sum(eff.values()) == Fraction(1, 5)  # exactly the cap
    assert info == {"share_before": 0.5, "share_after": 0.2, "factor": 0.25, "applied": True, "reason": None}
    assert capped_weights(parts, None)[0]["a"] == Fraction(1, 2)
    assert capped_weights(parts, Fraction(1, 2))[1]["applied"] is False  # at the cap: unchanged
    only = capped_weights([("a", Fraction(1), True)], Fraction(1, 5))[1]
    assert only["applied"] is False and "cannot hold" in only["reason"]


CAP_PLAN = ("partitions:\n"
            "  - labels: {intent: e1}\n    frequency: 0.3\n    damage: 1\n    s: 0\n"
            "  - labels: {intent: e2}\n    frequency: 0.2\n    damage: 1\n    s: 0\n"
            "  - labels: {kind: adversarial, attack: secret}\n    frequency: 0.25\n    damage: 2\n    s: 0\n")


def test_the_cap_holds_in_suite_json(tmp_path):
    """A hand-computed example (also in references/loss-layer.md).

    Categories: routing (weight 1) and secret (weight 1, adversarial). Partitions and unit losses L:
      e1 (w 0.3): E1 routing fail → L 1;  E2 clean → 0.   loss 0.5
      e2 (w 0.2): E3, E4 clean.                           loss 0
      adversarial secret (w 0.25·2 = 0.5): X1 leaks → routing 0, secret 1, L = 1/2; X2 holds → 0.  loss 0.25
    Uncapped: (0.3·0.5 + 0.2·0 + 0.5·0.25) / 1.0 = 0.275; the adversarial share is 0.5.
    Cap 0.2: f = 0.2·0.5 / (0.8·0.5) = 0.25, effective weight 0.125, share 0.125 / 0.625 = 0.2;
      suite_score = (0.15 + 0 + 0.125·0.25) / 0.625 = 0.18125 / 0.625 = 0.29.
    """
    categories = [cat("routing", 1, ["routing.*"]), cat("secret", 1, ["adversarial.secret_leak"], scope="adversarial")]
    p = plan(tmp_path, CAP_PLAN)
    units = [unit("E1", labels={"intent": "e1"}, trips=[("routing.skill_missing", "fail", [ev("none")])]),
             unit("E2", labels={"intent": "e1"}), unit("E3", labels={"intent": "e2"}), unit("E4", labels={"intent": "e2"}),
             adv_unit("X1", "secret", True), adv_unit("X2", "secret", False)]
    uncapped = score(results(units), staged(categories, cap=0.5), p).suite  # share 0.5 is within a 0.5 cap
    assert uncapped["suite_score"] == pytest.approx(0.275) and uncapped["cap"]["by_provenance"]["synthetic"][
        "applied"] is False
    capped = score(results(units), staged(categories, cap=0.2), p).suite
    check_suite(capped, "suite.json")
    assert cell(capped, "attack=secret,kind=adversarial,provenance=synthetic")["loss"] == 0.25
    assert capped["suite_score"] == pytest.approx(0.29, abs=1e-12)
    assert capped["cap"] == {"adversarial": 0.2, "by_provenance": {"synthetic": {
        "share_before": 0.5, "share_after": 0.2, "factor": 0.25, "applied": True, "reason": None}}}
    weights = {p_["partition"]: p_.get("effective_weight") for p_ in capped["partitions"]}
    assert weights == {"intent=e1,provenance=synthetic": 0.3, "intent=e2,provenance=synthetic": 0.2,
                       "attack=secret,kind=adversarial,provenance=synthetic": 0.125}


def test_e2e_plan_shows_the_cap(tmp_path):
    text = render_plan_md(plan(tmp_path, CAP_PLAN), Fraction(1, 5))
    assert "## Adversarial cap" in text and "at most 0.2 of the suite score" in text
    assert "adversarial weight 0.5 of 1 (share 0.5); above the cap, so f = 0.25." in text
    assert "| attack=secret,kind=adversarial,provenance=synthetic | 0.5 | 0.125 |" in text
    assert "## Adversarial cap" not in render_plan_md(plan(tmp_path, "partitions:\n  - labels: {intent: a}\n"
                                                                     "    frequency: 1\n    damage: 1\n"))


def test_bundled_plan_and_catalog_cap():
    text = render_plan_md(load_plan(), V3.cap_adversarial)
    # everyday 1.5 (1.4 by intent + 0.1 ui), adversarial 4 × 0.15 = 0.6: f = 0.2·1.5 / (0.8·0.6) = 0.625
    assert "adversarial weight 0.6 of 2.1 (share 0.2857); above the cap, so f = 0.625." in text
    assert (REPO / "E2E-PLAN.md").read_text(encoding="utf-8").endswith(text[text.index("## A note"):])
    assert text[text.index("## Adversarial cap"):text.index("## A note")] in (REPO / "E2E-PLAN.md").read_text()


# ---------------------------------------------------------------------- implicit facets


def test_channel_and_kind_are_implicit_facets(tmp_path):
    p = plan(tmp_path, "partitions:\n  - labels: {intent: a}\n    frequency: 1\n    damage: 1\n"
                       "  - labels: {channel: ui}\n    frequency: 1\n    damage: 1\n"
                       "  - labels: {kind: adversarial}\n    frequency: 1\n    damage: 1\n")
    everyday, ui, adv = p.partitions
    assert everyday.contains({"intent": "a", "provenance": "synthetic"})  # a unit from before channels
    assert everyday.contains({"intent": "a", "provenance": "synthetic", "channel": "cli", "kind": "everyday"})
    assert not everyday.contains({"intent": "a", "provenance": "synthetic", "channel": "ui"})
    assert not everyday.contains({"intent": "a", "provenance": "synthetic", "kind": "adversarial"})
    assert ui.contains({"intent": "a", "provenance": "synthetic", "channel": "ui"})
    assert adv.contains({"intent": "x", "provenance": "synthetic", "kind": "adversarial"}) and adv.adversarial
    assert everyday.key == "intent=a,provenance=synthetic"  # keys stay as written
    with pytest.raises(ConfigError) as err:
        plan(tmp_path, "partitions:\n  - labels: {channel: ui}\n    frequency: 1\n    damage: 1\n"
                       "  - labels: {channel: ui, intent: a}\n    frequency: 1\n    damage: 1\n")
    assert "can hold the same units" in str(err.value)


# ---------------------------------------------------------------------- re-scoring a v1 baseline under v3


def v1_baseline() -> dict:
    """A baseline as a v1-era run wrote it: no channel, no kind, no ui or adversarial outcomes."""
    lab = {"intent": "price_lookup", "channel": "cli"}
    units = [unit("MD1", labels=lab), unit("MD2", labels=lab, trips=[("routing.skill_missing", "fail", [ev("x")])]),
             unit("MD3", labels=lab, trips=[("hub.unverified_number:987.65", "needs_review", [ev("y")])],
                  answers={"hub.incomplete_answer": "yes"}),
             unit("F1", labels={"intent": "fundamentals", "channel": "cli"},
                  ratings={"hub.incomplete_answer": [1, 0, 1]}),
             unit("R1", labels={"intent": "refusal", "channel": "cli"})]
    for u in units:
        for key in ("channel", "kind", "attack"):
            u.pop(key, None)
        assert all(o["layer"] in (1, 2, 3) for o in u["rule_outcomes"])
    return results(units, catalog_version="v1", run_id="2026-11-01/120000")


def test_v1_baseline_rescored_under_v3_gives_the_documented_result():
    """references/loss-layer.md: every v1 category scores as under v1, the v2 and v3 categories
    are unbewertbar (n 0, never 0 loss), unit totals and the suite score are unchanged."""
    base = v1_baseline()
    p = load_plan()
    under_v1 = score(copy.deepcopy(base), V1, p, mode="B").suite
    under_v3 = score(copy.deepcopy(base), V3, p, mode="B").suite
    check_suite(under_v3, "suite.json")
    assert under_v3["suite_score"] == under_v1["suite_score"] and under_v1["suite_score"] is not None
    for p1, p3 in zip(under_v1["partitions"], under_v3["partitions"]):
        assert p1["partition"] == p3["partition"]
        for key in ("n", "loss", "stddev_between", "se", "status", "coverage"):
            assert p3[key] == p1[key], (p1["partition"], key)
        for cat_id, c1 in p1["by_category"].items():
            assert p3["by_category"][cat_id] == c1, (p1["partition"], cat_id)
        for cat_id in (*UI_CATS, *ADV_CATS):
            c3 = p3["by_category"][cat_id]
            assert (c3["status"], c3["n"], c3["loss"]) == ("unbewertbar", 0, None), (p3["partition"], cat_id)
    assert under_v3["cap"]["by_provenance"]["synthetic"]["share_before"] == 0
    assert any("re-scored with catalog v3" in w for w in under_v3["warnings"])


def test_a_v3_run_against_a_v1_baseline_compares_only_what_both_have(tmp_path):
    base = score(v1_baseline(), V3, load_plan(), mode="B")
    lab = {"intent": "price_lookup", "channel": "cli"}
    new_units = [unit("MD1", labels=lab), unit("MD2", labels=lab), unit("MD3", labels=lab),
                 ui_unit("MD1.ui", labels={"intent": "price_lookup"}), adv_unit("ADV15", "secret", True)]
    new = score(results(new_units), V3, load_plan())
    cmp = compare(new, base)
    compared = {(c.partition, c.category) for c in cmp.cells}
    assert not any(cat_id in UI_CATS + ADV_CATS for _, cat_id in compared)


def test_v2_baseline_rescored_under_v3():
    """A v2-era baseline (ui units with their outcomes, no kinds): the ui cells are unbewertbar
    in mode B like any category that needs execution, the adversarial cells because no
    adversarial rule ran; v1 cells and the suite score are as under v2."""
    units = [unit("MD1", labels={"intent": "price_lookup"}),
             ui_unit("MD1.ui", {"ui.raw_markup": "fail"}, labels={"intent": "price_lookup"})]
    for u in units:
        u.pop("kind", None)
    p = load_plan()
    under_v2 = score(results(copy.deepcopy(units)), V2, p, mode="B").suite
    under_v3 = score(results(copy.deepcopy(units)), V3, p, mode="B").suite
    assert under_v3["suite_score"] == under_v2["suite_score"]
    ui = cell(under_v3, "channel=ui,provenance=synthetic")
    assert ui["n"] == 1 and all(ui["by_category"][c]["status"] == "unbewertbar" for c in (*UI_CATS, *ADV_CATS))
    in_mode_a = score(results(copy.deepcopy(units)), V3, p, mode="A").suite
    assert cell(in_mode_a, "channel=ui,provenance=synthetic", "ui_display")["loss"] == 1


# ---------------------------------------------------------------------- v4: the faithfulness question

V4 = load_catalog(REPO / "catalogs" / "loss-catalog.v4.json")


def test_v4_adds_faithfulness_and_moves_two_weights_to_stay_within_the_model_judged_limit():
    assert [c.id for c in V4.categories if c.id != "answer_faithfulness"] == [c.id for c in V3.categories]
    faith = V4.by_id("answer_faithfulness")
    assert (faith.type, faith.codes, faith.weight_exact, faith.scope) == (
        "model_judged", ("hub.unfaithful_answer",), Fraction(1, 10), "all")
    moved = {c.id for c in V3.categories if c.weight_exact != V4.by_id(c.id).weight_exact}
    assert moved == {"answer_completeness", "adversarial_judged"}
    assert V4.by_id("answer_completeness").weight_exact == V4.by_id("adversarial_judged").weight_exact == Fraction(1, 10)
    for c in V3.categories:  # everything else as in v3
        assert (V4.by_id(c.id).codes, V4.by_id(c.id).scope, V4.by_id(c.id).type) == (c.codes, c.scope, c.type)
    assert sum(c.weight_exact for c in V4.categories if c.model_judged) == Fraction(3, 10)
    assert V4.cap_adversarial == V3.cap_adversarial


def test_faithfulness_is_scored_from_the_panel_and_unbewertbar_where_nobody_judged_it():
    lab = {"intent": "price_lookup"}
    units = [unit("MD1", labels=lab, ratings={"hub.incomplete_answer": [0, 0, 0], "hub.unfaithful_answer": [1, 1, 0]}),
             unit("MD2", labels=lab, answers={"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "no"}),
             unit("MD3", labels=lab, ratings={"hub.incomplete_answer": [0, 0, 0]})]  # judged before the question
    p = load_plan()
    suite = score(results(copy.deepcopy(units)), V4, p, mode="A").suite
    faith = cell(suite, "intent=price_lookup,provenance=synthetic", "answer_faithfulness")
    # MD1: mean of the judges' losses 2/3; MD2: "no" (it states something a payload contradicts) is 1;
    # MD3 was never asked: no value, never 0.
    assert faith["n"] == 2 and faith["loss"] == pytest.approx((2 / 3 + 1) / 2)
    under_v3 = score(results(copy.deepcopy(units)), V3, p, mode="A").suite
    assert "answer_faithfulness" not in cell(under_v3, "intent=price_lookup,provenance=synthetic")["by_category"]
    before = score(results([copy.deepcopy(units[2])]), V4, p, mode="B").suite
    old = cell(before, "intent=price_lookup,provenance=synthetic", "answer_faithfulness")
    assert (old["status"], old["n"], old["loss"]) == ("unbewertbar", 0, None)
