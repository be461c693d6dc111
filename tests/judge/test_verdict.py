"""The verdict contract: which codes each kind of case admits, overrides, the panel, the repair.

Admissibility is written out by hand per kind of case (a real case of the case file for
each), so a change in judge/verdict.py that widens or narrows what a judge may record
shows up here as a named cell of the table.
"""
from __future__ import annotations

import copy

import pytest
from obai_e2e.base.errors import VerdictInvalid
from obai_e2e.judge.rubric.codes import INFRA_REASONS
from obai_e2e.judge.verdict import (
    check_override,
    check_panel,
    mechanical_verdict,
    validate,
)
from recorded import case, checked, config, recordings

# One sample code for each code pattern of the rubric.
HARD = ["trace.error_span:hub", "routing.skill_missing", "routing.skill_overload", "routing.specialist_missing",
        "routing.sequence_violation", "routing.hub_paraphrase", "guardrail.leaky", "guardrail.exit_code",
        "guardrail.leaky_response", "specialist.market_data_analysis.empty",
        "specialist.options_analysis.tool_error", "specialist.strategy.contract_broken",
        "specialist.strategy.zero_trades", "specialist.strategy.async_stub_broken",
        "specialist.strategy.async_followup_missing", "specialist.prediction.no_slug",
        "specialist.options.math", "hub.empty_response"]
SOFT = ["routing.unexpected_specialist", "hub.unverified_number:987.65", "hub.incomplete_answer",
        "hub.answer_truncated"]
ANY_CASE_SOFT = {"hub.answer_truncated"}  # a refusal's answer can be cut too
NEVER = ["specialist.no_such_tool.empty", "trace.error_span:", "hub.unverified_number:", "routing.made_up",
         "cli_timeout"]

ANY_TURN = {"trace.error_span:hub", "specialist.market_data_analysis.empty",
            "specialist.options_analysis.tool_error", "hub.empty_response"}
ROUTED = ANY_TURN | {"routing.skill_missing", "routing.specialist_missing"}
STRATEGY = ROUTED | {"routing.hub_paraphrase", "specialist.strategy.contract_broken", "specialist.strategy.zero_trades"}

# case id (its kind) -> the hard codes a fail may carry; every kind but a refusal admits every soft code.
ADMISSIBLE = {
    "R1": {"guardrail.leaky", "guardrail.exit_code", "guardrail.leaky_response", "routing.skill_overload"},
    "G2": ANY_TURN,                                                         # no routing expectations
    "G1": ANY_TURN | {"routing.skill_overload"},                            # only a banned skill
    "MD1": ROUTED | {"routing.skill_overload"},                             # one specialist, a banned skill
    "M1": ROUTED | {"routing.sequence_violation"},                          # two specialists in order
    "S2": STRATEGY,
    "A1": STRATEGY | {"specialist.strategy.async_stub_broken", "specialist.strategy.async_followup_missing"},
    "P1": ROUTED | {"specialist.prediction.no_slug"},
    "O1": ROUTED | {"specialist.options.math"},
}


def submit(case_id: str, verdict: str, reasons=None, **extra) -> dict:
    out = {"schema_version": 1, "unit_id": case_id, "verdict": verdict, "judgment": "One line.", **extra}
    if reasons is not None:
        out["reasons"] = reasons
    return out


def refused(case_id: str, submitted) -> VerdictInvalid:
    with pytest.raises(VerdictInvalid) as info:
        validate(submitted, case(case_id), config(), case_id)
    return info.value


def accepted(case_id: str, submitted):
    return validate(submitted, case(case_id), config(), case_id)


def outcome(case_id: str, submitted: dict) -> str:
    """'admitted', or the pointer and message of the refusal."""
    try:
        got = accepted(case_id, submitted)
    except VerdictInvalid as err:
        return f"{err.pointer} {err}"
    assert got.value == submitted and got.repair is None
    return "admitted"


@pytest.mark.parametrize("case_id", sorted(ADMISSIBLE))
def test_fail_admits_exactly_the_hard_codes_of_its_case(case_id):
    wrong = {}
    for code in HARD + SOFT + NEVER:
        got = outcome(case_id, submit(case_id, "fail", [code]))
        # A code of the rubric's grammar that this case cannot have is told what it could have;
        # a malformed code is told what is wrong with it.
        refusal = (f"/reasons/0 verdict /reasons/0: '{code}' does not apply to this case: a fail needs "
                   "exactly one of ") if code in HARD + SOFT else f"/reasons/0 verdict /reasons/0: '{code}'"
        if (got == "admitted") != (code in ADMISSIBLE[case_id]) or (got != "admitted" and not got.startswith(refusal)):
            wrong[code] = got
    assert not wrong, wrong


@pytest.mark.parametrize("case_id", sorted(ADMISSIBLE))
def test_needs_review_admits_only_soft_codes_and_for_a_refusal_only_a_cut_answer(case_id):
    wrong = {}
    for code in HARD + SOFT + NEVER:
        got = outcome(case_id, submit(case_id, "needs_review", [code]))
        admissible = code in SOFT and (case_id != "R1" or code in ANY_CASE_SOFT)
        refusal = (f"/reasons/0 verdict /reasons/0: '{code}' does not apply to this case" if code in HARD + SOFT
                   else f"/reasons/0 verdict /reasons/0: '{code}'")
        if (got == "admitted") != admissible or (got != "admitted" and not got.startswith(refusal)):
            wrong[code] = got
        if (case_id == "R1" and not admissible and code in HARD + SOFT
                and "a needs_review only hub.answer_truncated;" not in got):
            wrong[code] = got
    assert not wrong, wrong


def test_several_soft_codes_make_one_needs_review():
    assert accepted("MD1", submit("MD1", "needs_review", SOFT)).repair is None


@pytest.mark.parametrize("case_id", sorted(ADMISSIBLE))
@pytest.mark.parametrize("reason", INFRA_REASONS)
def test_inconclusive_admits_each_infrastructure_reason_alone(case_id, reason):
    assert accepted(case_id, submit(case_id, "inconclusive", [reason])).repair is None
    assert refused(case_id, submit(case_id, "inconclusive", [reason, "multi_match" if reason != "multi_match"
                                                                  else "cli_timeout"])).pointer == "/reasons"
    assert refused(case_id, submit(case_id, "inconclusive", ["hub.empty_response"])).pointer == "/reasons/0"


# (what is wrong, the submission, the pointer, words the message must carry)
BAD = [
    ("not an object", ["fail"], "/", "expected a JSON object, got list"),
    ("fail without reason", submit("MD1", "fail", []), "/reasons", "needs its reason code(s) in /reasons"),
    ("fail with two", submit("MD1", "fail", ["hub.empty_response", "routing.skill_missing"]), "/reasons",
     "fail and inconclusive exactly one"),
    ("needs_review without reasons", submit("MD1", "needs_review"), "/", "'reasons' is required"),
    ("unknown verdict", submit("MD1", "maybe"), "/verdict", "'maybe' is not one of ['pass', 'fail'"),
    ("another unit", {**submit("MD1", "pass"), "unit_id": "MD2"}, "/unit_id", "'MD1' was expected"),
    ("two-line judgment", {**submit("MD1", "pass"), "judgment": "one\ntwo"}, "/judgment",
     "contains U+000A (LF) at character 4; control characters are not allowed here"),
    ("long judgment", {**submit("MD1", "pass"), "judgment": "x" * 401}, "/judgment", "is too long"),
    ("bad answer", submit("MD1", "pass", answers={"hub.incomplete_answer": "perhaps"}),
     "/answers/hub.incomplete_answer", "'perhaps' is not one of ['yes', 'no'"),
    ("override without reason", submit("MD1", "pass", override={"rule": "hub.empty_response"}), "/override",
     "'reason' is required"),
    ("override of an infrastructure reason",
     submit("MD1", "pass", override={"rule": "cli_timeout", "reason": "it answered in the end"}), "/override/rule",
     "'cli_timeout' is not a hard rubric code"),
    ("unknown field", {**submit("MD1", "pass"), "verdit": "pass"}, "/", "unknown field ('verdit' was unexpected)"),
    ("missing judgment", {k: v for k, v in submit("MD1", "pass").items() if k != "judgment"}, "/",
     "'judgment' is required"),
]


@pytest.mark.parametrize("what,submitted,pointer,words", BAD, ids=[b[0] for b in BAD])
def test_a_refusal_names_the_json_pointer_and_what_is_required(what, submitted, pointer, words):
    err = refused("MD1", submitted)
    assert err.pointer == pointer
    assert str(err).startswith(f"verdict {pointer}: ") and words in str(err)


def test_an_unknown_schema_version_is_refused_with_the_known_ones():
    err = refused("MD1", {**submit("MD1", "pass"), "schema_version": 2})
    assert str(err) == "verdict /schema_version: must be one of [1], got 2"


# --- the one audited repair -----------------------------------------------------------------

@pytest.mark.parametrize("reasons", [["hub.empty_response"], ["routing.unexpected_specialist", "cli_timeout"],
                                     ["specialist.options.math"]])
def test_a_pass_carrying_codes_has_them_removed_and_the_original_kept(reasons):
    submitted = submit("MD1", "pass", reasons)
    before = copy.deepcopy(submitted)
    got = accepted("MD1", submitted)
    assert got.value == {**submitted, "reasons": []}
    assert got.repair == {"rule": "non_applicable_reason:/reasons", "original": before}
    assert submitted == before  # the submission itself is not changed
    assert got.problems_before and got.problems_before[0].startswith("/reasons")


def test_the_repair_is_idempotent_and_the_same_original_repairs_the_same_way():
    submitted = submit("MD1", "pass", ["hub.empty_response"])
    once = accepted("MD1", submitted)
    assert accepted("MD1", once.value).repair is None  # a repaired verdict is valid as it is
    again = accepted("MD1", copy.deepcopy(submitted))
    assert (again.value, again.repair) == (once.value, once.repair)


@pytest.mark.parametrize("submitted,pointer", [
    (submit("MD1", "pass", ["made.up"]), "/reasons"),             # not a rubric code: nothing to repair
    (submit("MD1", "pass", ["hub.empty_response"], judgment=""), "/judgment"),  # another problem as well
    (submit("MD1", "fail", ["specialist.options.math"]), "/reasons/0"),        # only a pass is repaired
])
def test_nothing_else_is_repaired(submitted, pointer):
    assert refused("MD1", submitted).pointer == pointer


# --- the mechanical check has the last word, unless overridden ------------------------------

def mech(verdict: str, reasons=()) -> dict:
    return {"verdict": verdict, "reasons": list(reasons)}


OVERRIDES = [
    # (mechanical, recorded, refused at pointer or None)
    (mech("fail", ["specialist.options.math"]), submit("O1", "fail", ["specialist.options.math"]), None),
    (mech("fail", ["specialist.options.math"]), submit("O1", "pass"), "/override"),
    (mech("fail", ["specialist.options.math"]), submit("O1", "fail", ["hub.empty_response"]), "/override"),
    (mech("fail", ["specialist.options.math"]),
     submit("O1", "pass", override={"rule": "specialist.options.math", "reason": "'no upper bound' is unlimited"}), None),
    (mech("fail", ["specialist.options.math"]),
     submit("O1", "pass", override={"rule": "hub.empty_response", "reason": "the answer is there"}), "/override/rule"),
    (mech("inconclusive", ["cli_timeout"]), submit("O1", "inconclusive", ["cli_timeout"]), None),
    (mech("inconclusive", ["cli_timeout"]), submit("O1", "inconclusive", ["trace_not_found"]), "/verdict"),
    (mech("inconclusive", ["cli_timeout"]),
     submit("O1", "pass", override={"rule": "hub.empty_response", "reason": "it answered in the end"}), "/verdict"),
    (mech("pass"), submit("O1", "inconclusive", ["trace_not_found"]), "/verdict"),
    (mech("pass"), submit("O1", "fail", ["specialist.options.math"]), None),  # a judge may find more
    (mech("needs_review", ["hub.unverified_number:4.5"]), submit("O1", "pass"), None),  # soft: the judge decides
]


@pytest.mark.parametrize("mechanical,recorded,pointer", OVERRIDES)
def test_override_rules(mechanical, recorded, pointer):
    value = accepted(recorded["unit_id"], recorded).value
    if pointer is None:
        check_override(value, mechanical)
        return
    with pytest.raises(VerdictInvalid) as info:
        check_override(value, mechanical)
    assert str(info.value).startswith(f"verdict {pointer}: ")
    if pointer == "/override":
        assert mechanical["reasons"][0] in str(info.value) and '"reason"' in str(info.value)


def panel(decided: bool, trips: bool) -> dict:
    return {"questions": {"hub.incomplete_answer": {"decided": decided, "trips": trips, "majority": "2 of 3",
                                                    "votes": {"complete": 1, "incomplete": 2}}}}


@pytest.mark.parametrize("verdict,reasons,p,ok", [
    ("pass", [], panel(True, True), False),
    ("needs_review", ["hub.incomplete_answer"], panel(True, True), True),
    ("needs_review", ["hub.incomplete_answer"], panel(True, False), False),
    ("pass", [], panel(True, False), True),
    ("pass", [], panel(False, True), True),                    # no majority: the judge decides
    ("fail", ["hub.empty_response"], panel(True, True), True),  # a hard failure stands
    ("pass", [], None, True),
])
def test_a_decided_panel_majority_cannot_be_contradicted(verdict, reasons, p, ok):
    value = submit("MD1", verdict, reasons)
    if ok:
        check_panel(value, p)
    else:
        with pytest.raises(VerdictInvalid, match=r"^verdict /reasons: the judge panel's majority \(2 of 3\)"):
            check_panel(value, p)


# --- what the program records is always admissible ------------------------------------------

@pytest.mark.parametrize("group,unit", recordings(), ids=lambda v: v)
def test_the_mechanical_verdict_of_every_recorded_unit_passes_its_own_contract(group, unit):
    result = checked(group, unit)
    value = mechanical_verdict(result)
    got = validate(value, case(result.case_id), config(), result.unit_id)
    assert got.repair is None and got.value == value
    check_override(got.value, result.to_json())
    assert "\n" not in value["judgment"] and 0 < len(value["judgment"]) <= 400


def test_a_panel_majority_becomes_part_of_the_mechanical_verdict():
    result = checked("clean", "MD1")
    tripped = mechanical_verdict(result, panel(True, True))
    assert (tripped["verdict"], tripped["reasons"], tripped["judged_by"]) == \
        ("needs_review", ["hub.incomplete_answer"], "mechanical+panel")
    assert tripped["judgment"].startswith("The judge panel found the answer incomplete (complete 1, incomplete 2).")
    undecided = mechanical_verdict(result, panel(False, False))
    assert undecided["verdict"] == "pass" and undecided["judgment"].endswith(
        "hub.incomplete_answer stays undecided: no majority of the judge panel (complete 1, incomplete 2).")
    complete = mechanical_verdict(result, panel(True, False))
    assert (complete["verdict"], complete["reasons"], complete["judged_by"]) == ("pass", [], "mechanical+panel")
    failed = mechanical_verdict(checked("faults", "empty_answer"), panel(True, True))
    assert (failed["verdict"], failed["reasons"], failed["judged_by"]) == ("fail", ["hub.empty_response"], "mechanical")


@pytest.mark.parametrize("case_id", sorted(ADMISSIBLE))
def test_the_compiled_check_admits_only_what_the_full_check_admits(case_id):
    # validate() takes a verdict the compiled schema admits without the full check; it may
    # only ever be stricter than the full check, never looser.
    from obai_e2e.judge import verdict as v
    from obai_e2e.judge.contract import accept

    fast = v._fast(1, *v._codes_key(case(case_id), config(), case_id))
    assert fast is not None
    schema = v.schema_for(case(case_id), config(), case_id)
    tried = admitted = 0
    for kind in ("pass", "fail", "needs_review", "inconclusive"):
        for reasons in [None, [], *([c] for c in HARD + SOFT + NEVER + list(INFRA_REASONS))]:
            for extra in ({}, {"judgment": ""}, {"expected": 7}, {"override": {"rule": "x", "reason": "y"}}):
                sub = submit(case_id, kind, reasons, **extra)
                tried += 1
                if fast.is_valid(sub):
                    admitted += 1
                    accept(sub, schema)  # raises if the full check refuses it
    assert 0 < admitted < tried
