"""The fixed calibration items: the catalog is checked as it loads, its items read like the agent's own
answers, and a round shows them so that a judge cannot tell them from live packets by any field,
length class or position."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.judge.panel.bundle import packet_text
from obai_e2e.judge.panel.fixed_items import default_path, load_calibration, span_ids
from obai_e2e.judge.panel.packets import generate
from obai_e2e.judge.panel.rounds import load_round
from obai_e2e.judge.rubric.numbers import Pool, extract
from obai_e2e.run.plan import plan
from recorded import CLEAN, cases, clean_units, config, packet_json, run_with_packets

HUB, FAITH = "hub.incomplete_answer", "hub.unfaithful_answer"
CATALOG = json.loads(default_path().read_text(encoding="utf-8"))


# -- the catalog -----------------------------------------------------------------------------------

def test_the_bundled_catalog_is_balanced_over_every_choice_of_both_questions():
    cal = load_calibration()
    counts = Counter((q, c) for item in cal.items for q, c in item.gold.items())
    assert cal.min_per_choice == 8 and all(n >= 8 for n in counts.values())
    assert set(counts) == {(HUB, "complete"), (HUB, "incomplete"), (FAITH, "faithful"), (FAITH, "unfaithful")}
    # every combination, so that neither question can be read off the other
    combos = Counter((i.gold[HUB], i.gold.get(FAITH)) for i in cal.items)
    assert all(combos[(c, f)] >= 4 for c in ("complete", "incomplete") for f in ("faithful", "unfaithful"))
    assert combos[("complete", None)] and combos[("incomplete", None)]  # answers without payloads too
    assert cal.identity()["sha256"] and cal.version == "v1"


def test_the_catalog_and_its_schema_are_frozen_with_the_other_catalogs():
    from obai_e2e.protocol.freeze import frozen_files

    assert {"catalogs/calibration.v1.json", "schemas/calibration.schema.json"} <= set(frozen_files())


def test_another_agents_items_are_named_by_the_environment(tmp_path, monkeypatch):
    path = _write(tmp_path, GOOD)
    monkeypatch.setenv("OBAI_E2E_CALIBRATION", str(path))
    assert default_path() == path and [i.id for i in load_calibration().items] == ["A", "B"]


def _numbers_grounded(answer: str, payloads: list[str], query: str) -> list[str]:
    pool, asked = Pool(payloads), Pool([query])
    return [n.text for n in extract(answer) if not (pool.contains(n) or asked.contains(n))]


@pytest.mark.parametrize("item", CATALOG["items"], ids=lambda i: i["id"])
def test_every_item_reads_like_an_answer_the_rules_pass(item):
    """Every number an item's answer states is in its payloads (or its query), as in a live answer that
    passes hub.unverified_number; its specialists are the demo's; nothing in it depends on the day it is
    shown (its time is borrowed from a live packet)."""
    payloads = [p["output_text"] for p in item["specialist_payloads"]]
    follow = item.get("followup")
    if follow:
        payloads += [p["output_text"] for p in follow["specialist_payloads"]]
    for text, query in [(item["final_answer"], item["query"])] + ([(follow["final_answer"], follow["query"])]
                                                                  if follow else []):
        assert _numbers_grounded(text, payloads, query) == [], item["id"]
    names = {p["specialist"] for p in item["specialist_payloads"]}
    assert names <= set(config().vocabulary.specialists), names
    words = " ".join([item["query"], item["final_answer"], *payloads]).lower()
    assert not re.search(r"\b(today|yesterday|tomorrow|this week|right now)\b", words), item["id"]


def _labels(text: str) -> set[str]:
    """The labels of a payload's lines (``Last close`` of ``Last close: 238.41 on …``)."""
    return {line.split(": ", 1)[0] for line in text.splitlines() if ": " in line}


def test_items_are_written_in_the_agents_own_forms_and_never_repeat_a_live_question():
    """Each payload uses only line labels the demo's own specialists write (as recorded), so it reads like
    theirs; no item asks a question of the default suite (one question answered two ways in a round would
    single one of them out)."""
    seen: dict[str, set[str]] = {}
    for unit in clean_units():
        digest = packet_json(CLEAN, unit)["trace"].get("digest") or {}
        for call in digest.get("specialist_calls", []):
            seen.setdefault(call["name"], set()).update(_labels(call["output_text"]))
    for item in CATALOG["items"]:
        for p in item["specialist_payloads"] + (item.get("followup") or {}).get("specialist_payloads", []):
            assert _labels(p["output_text"]) <= seen[p["specialist"]], (item["id"], _labels(p["output_text"]) -
                                                                        seen[p["specialist"]])
    live = {c.query.strip().lower() for c in cases().cases}
    assert not [i["id"] for i in CATALOG["items"] if i["query"].strip().lower() in live]


def _write(tmp_path: Path, items: list[dict], **top) -> Path:
    path = tmp_path / "calibration.v1.json"
    path.write_text(json.dumps({"version": "v1", "min_per_choice": 1, "items": items, **top}))
    return path


PAYLOAD = [{"specialist": "market_data_analysis", "output_text": "AAPL (Apple)\nLast close: 238.41 on 2026-04-30"}]


def _item(iid: str, gold: dict, payloads=PAYLOAD) -> dict:
    return {"id": iid, "query": "What is AAPL's price?", "final_answer": "AAPL closed at 238.41.",
            "specialist_payloads": payloads, "gold": gold}


GOOD = [_item("A", {HUB: "complete", FAITH: "faithful"}), _item("B", {HUB: "incomplete", FAITH: "unfaithful"})]


def test_a_small_balanced_catalog_loads(tmp_path):
    assert [i.id for i in load_calibration(_write(tmp_path, GOOD)).items] == ["A", "B"]


@pytest.mark.parametrize("items, top, message", [
    ([GOOD[0], {**GOOD[1], "gold": {HUB: "incomplete", "hub.incomplet_answer": "x"}}], {},
     "item 'B', field /items/1/gold: 'hub.incomplet_answer' is not a judgment question"),
    ([GOOD[0], {**GOOD[1], "gold": {HUB: "partly", FAITH: "unfaithful"}}], {},
     "item 'B', field /items/1/gold/hub.incomplete_answer: 'partly' is not one of its choices; expected one of "
     "complete, incomplete"),
    ([GOOD[0], {**GOOD[1], "gold": {FAITH: "unfaithful"}}], {},
     "item 'B', field /items/1/gold: every item is an answer to judge: give its hub.incomplete_answer choice"),
    ([GOOD[0], _item("B", {HUB: "incomplete", FAITH: "faithful"}, payloads=[])], {},
     "item 'B', field /items/1/gold: hub.unfaithful_answer applies exactly to an answer with specialist payloads: "
     "remove it (the item has no payload)"),
    ([GOOD[0], _item("B", {HUB: "incomplete"})], {},
     "hub.unfaithful_answer applies exactly to an answer with specialist payloads: give its choice"),
    ([GOOD[0], {**GOOD[1], "id": "A"}], {}, "item 'A', field /items/1/id: duplicate id"),
    (GOOD, {"min_per_choice": 2}, "field /items: 1 item(s) with hub.incomplete_answer 'complete'; at least 2 "
                                  "(min_per_choice)"),
])
def test_a_bad_catalog_names_the_file_the_item_the_field_and_what_is_expected(tmp_path, items, top, message):
    path = _write(tmp_path, items, **top)
    with pytest.raises(ConfigError) as err:
        load_calibration(path)
    assert str(err.value).startswith(f"calibration catalog {path}: ") and message in str(err.value)


def test_a_catalog_the_schema_refuses_is_named_with_its_pointer(tmp_path):
    path = _write(tmp_path, [{k: v for k, v in GOOD[0].items() if k != "gold"}, GOOD[1]])
    with pytest.raises(ConfigError, match=r"/items/0.*gold"):
        load_calibration(path)
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_calibration(tmp_path / "broken.json")
    with pytest.raises(ConfigError, match="is missing"):
        load_calibration(tmp_path / "absent.json")


# -- a round of the default suite: what a judge sees ---------------------------------------------------

@pytest.fixture(scope="module")
def suite_round(tmp_path_factory):
    """A round over every recorded clean unit of the default suite, with the fixed items mixed in."""
    root = tmp_path_factory.mktemp("suite")
    run = run_with_packets(root, {u: packet_json(CLEAN, u) for u in clean_units()})
    out = generate(run, config(), plan(run, cases()).units)
    return run, load_round(run, "r1"), out


SPAN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC \([A-Z][a-z]+day\)$")


def shape(packet: dict) -> tuple:
    """Everything about a packet but its texts and ids: its fields, its payloads' fields, turns, names and
    id shapes, its questions and whether each applies, the form of its times."""
    follow = packet.get("followup")
    return (tuple(sorted(packet)), tuple(sorted(follow)) if follow else None,
            tuple((tuple(sorted(p)), p["turn"], p["ref"], bool(SPAN.match(p["span_id"])))
                  for p in packet["specialist_payloads"]),
            tuple((q["id"], q["feeds"], q["applies"], tuple(q["choices"])) for q in packet["questions"]),
            bool(TIME.match(packet["asked_at"] or "")), bool(TIME.match((follow or {}).get("asked_at") or "x")),
            packet["packet_version"], packet["response_schema_version"])


def test_no_field_tells_a_fixed_item_from_a_live_packet(suite_round):
    _, rnd, out = suite_round
    assert out["fixed_items"] == 20 and out["units"] == len(rnd.mapping)
    live = [rnd.packets[p] for p in rnd.mapping]
    fixed = [rnd.packets[p] for p in rnd.fixed]
    live_shapes = {shape(p) for p in live}
    assert all(shape(p) in live_shapes for p in fixed), [shape(p) for p in fixed if shape(p) not in live_shapes]
    # the values a judge could compare across packets come from the same sets
    assert {p["asked_at"] for p in fixed} <= {p["asked_at"] for p in live}
    assert {p["followup"]["asked_at"] for p in fixed if "followup" in p} <= \
        {p["followup"]["asked_at"] for p in live if "followup" in p}
    assert {p["followup"]["note"] for p in fixed if "followup" in p} == {p["followup"]["note"] for p in live if "followup" in p}
    assert {s["specialist"] for p in fixed for s in p["specialist_payloads"]} <= \
        {s["specialist"] for p in live for s in p["specialist_payloads"]}
    # span ids: time-ordered within a packet and from the same minutes as the live spans
    def ms(span: str) -> int:
        return int(span[:8] + span[9:13], 16)
    live_ms = [ms(s["span_id"]) for p in live for s in p["specialist_payloads"]]
    for p in fixed:
        times = [ms(s["span_id"]) for s in p["specialist_payloads"]]
        assert times == sorted(times) and all(min(live_ms) - 60_000 <= t <= max(live_ms) + 60_000 for t in times)
    fixed_ids = [s["span_id"] for p in fixed for s in p["specialist_payloads"]]
    live_ids = {s["span_id"] for p in live for s in p["specialist_payloads"]}
    assert len(set(fixed_ids)) == len(fixed_ids) and not set(fixed_ids) & live_ids  # every span id its own


def test_no_length_class_tells_them_apart(suite_round):
    _, rnd, _ = suite_round
    live = sorted(len(packet_text(rnd.packets[p])) for p in rnd.mapping)
    fixed = [len(packet_text(rnd.packets[p])) for p in rnd.fixed]
    assert all(live[0] <= n <= live[-1] for n in fixed), (live[0], live[-1], sorted(fixed))
    thirds = (live[len(live) // 3], live[2 * len(live) // 3])
    classes = Counter(0 if n < thirds[0] else 1 if n < thirds[1] else 2 for n in fixed)
    assert set(classes) == {0, 1, 2}, classes  # short, middling and long ones, as among the live packets


def test_no_position_tells_them_apart(suite_round, tmp_path):
    run, rnd, _ = suite_round
    bundle = (rnd.dir / "bundle.md").read_text()
    order = re.findall(r"^## Packet \d+ of \d+: (\S+)$", bundle, re.M)
    assert order == sorted(rnd.packets)  # by random id: the place says nothing
    flags = [pid in rnd.fixed for pid in order]
    runs_of_fixed = sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))
    assert runs_of_fixed >= 5 and not all(flags[:20]) and not all(flags[-20:])  # interleaved, not a block
    again = generate(run, config(), plan(run, cases()).units, round_name="r2")
    r2 = load_round(run, "r2")
    order2 = re.findall(r"^## Packet \d+ of \d+: (\S+)$", (r2.dir / "bundle.md").read_text(), re.M)
    items = lambda rnd_, order_: [rnd_.fixed[p]["fixed_item"] for p in order_ if p in rnd_.fixed]  # noqa: E731
    assert again["fixed_items"] == 20 and items(rnd, order) != items(r2, order2)  # a new order every round


def test_the_bundle_for_a_judge_stays_small(suite_round):
    """The default suite's units, both questions and the 20 fixed items: at most 25,000 tokens (~100 KB) a judge."""
    _, rnd, out = suite_round
    size = len((rnd.dir / "bundle.md").read_bytes())
    assert size == out["bundle_bytes"] and size <= 100_000, size


def test_span_ids_keep_the_shape_of_the_live_ones():
    import random

    rng = random.Random(7)
    ids = span_ids(3, "01a23c4a-978e-7848-bae2-41041e3adec6", rng)
    assert all(SPAN.match(i) for i in ids) and ids == sorted(ids) and ids[0][:8] == "01a23c4a"
    other = span_ids(2, "span-ABC-123", rng)
    assert all(re.fullmatch(r"[a-z]{4}-[A-Z]{3}-\d{3}", i) for i in other) and len(set(other)) == 2
    assert all(re.fullmatch(r"[0-9a-f-]{36}", i) for i in span_ids(2, None, rng))
