"""What changed since the baseline: every unit's verdict against the same unit of the baseline run.

Enters: this run's results entries and the baseline's (its results.json), matched by unit
id. Leaves: ``diff.json`` (schemas/diff.v1.schema.json) and the one-line summary the CLI,
report.md, report.html and the CI summary show first.

Classes, per unit: ``new_fail`` (it fails now and did not fail in the baseline),
``fixed`` (it failed and now does not), ``still_failing`` (with ``codes_changed``),
``new_inconclusive`` (inconclusive now, not before), ``changed`` (another verdict change,
e.g. pass ↔ needs_review), ``unchanged``, ``new_case`` (not in the baseline), and
``removed_case`` (only in the baseline). A stochastic case whose repeats disagree in this
run is ``flaky`` (all its units), and its pass rate is set beside the baseline's.

The diff is built a unit at a time (:class:`DiffBuilder`): this run's units in their order,
each looked up in the baseline by id (:class:`Baseline`, an index of ids; a unit is read
when it is compared), then the baseline's units this run lacks. Only counts, the ids of the
changed units and the first few of each class are kept (:class:`DiffDigest`: what results.json,
report.md, the CLI and the chat show); the units themselves go to diff.json as they come
(report/diff_file.py). Whether a stochastic case is flaky depends on all its units, so their
verdicts are tallied first (:func:`tally_stochastic`).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from ..base.mdtable import inline
from ..config.units import unit_key

DIFF_SCHEMA_VERSION = 1
CLASSES = ("new_fail", "fixed", "new_inconclusive", "still_failing", "flaky", "changed", "new_case",
           "removed_case", "unchanged")
# The order a reader wants: what broke first.
SHOWN = ("new_fail", "new_inconclusive", "flaky", "still_failing", "fixed", "changed", "new_case", "removed_case")
ANSWER_CHARS = 2000


# What build_diff reads of a results entry; its rule outcomes only by rule, status and code.
DIFF_FIELDS = ("unit_id", "case_id", "channel", "feature", "verdict", "reasons", "stochastic", "answer",
               "followup_answer", "latency")


def diff_fields(entry: dict) -> dict:
    """The part of a results entry the diff compares: without evidence, details and curated traces,
    so that both runs' units of a large run fit in memory at once."""
    out = {k: entry[k] for k in DIFF_FIELDS if k in entry}
    out["rule_outcomes"] = [{"rule": o["rule"], "status": o.get("status"), "code": o.get("code")}
                            for o in entry.get("rule_outcomes") or []]
    return out


FIRST_KEPT = 20          # units of each class kept for the texts (markdown_lines shows 20)
JUDGED_OUT = ("inconclusive", "not_judged")


def _codes(entry: dict) -> list[str]:
    return list(entry.get("reasons") or [])


def _rules(entry: dict) -> dict[str, tuple[str, str | None]]:
    return {o["rule"]: (o.get("status"), o.get("code")) for o in entry.get("rule_outcomes") or []}


def changed_rules(new: dict, base: dict) -> list[dict]:
    """Rule outcomes whose status or code differs between the two entries."""
    a, b = _rules(new), _rules(base)
    out = []
    for rule in sorted(set(a) | set(b)):
        (ns, nc), (bs, bc) = a.get(rule, (None, None)), b.get(rule, (None, None))
        if (ns, nc) != (bs, bc):
            out.append({"rule": rule, "status": ns, "code": nc, "baseline_status": bs, "baseline_code": bc})
    return out


def classify(new: dict | None, base: dict | None) -> str:
    if base is None:
        return "new_case"
    if new is None:
        return "removed_case"
    nv, bv = new["verdict"], base["verdict"]
    if nv == "fail":
        return "still_failing" if bv == "fail" else "new_fail"
    if nv == "inconclusive" and bv != "inconclusive":
        return "new_inconclusive"  # also after a fail: the fail is not known to be fixed
    if bv == "fail":
        return "fixed" if nv in ("pass", "needs_review") else "changed"
    return "unchanged" if nv == bv else "changed"


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS] + f" … [cut: {len(text) - ANSWER_CHARS} more]"


def _key(entry: dict) -> str:
    return unit_key(entry["case_id"], entry.get("channel"))


def _seconds(entry: dict) -> float | None:
    ms = (entry.get("latency") or {}).get("turn_ms")
    return round(ms / 1000, 3) if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None


@dataclass
class CaseTally:
    """The verdicts of one case's units on one channel (its repeats)."""

    repeats: int = 0
    judged: int = 0
    passed: int = 0
    verdicts: set = field(default_factory=set)

    def add(self, verdict: str) -> None:
        self.repeats += 1
        if verdict not in JUDGED_OUT:
            self.judged += 1
            self.passed += verdict == "pass"
            self.verdicts.add(verdict)

    @property
    def flaky(self) -> bool:
        """Its repeats disagree (inconclusive ones aside)."""
        return self.repeats > 1 and len(self.verdicts) > 1

    @property
    def pass_rate(self) -> float | None:
        return round(self.passed / self.judged, 4) if self.judged else None


def tally_stochastic(entries: Iterable[dict], tallies: dict[str, CaseTally] | None = None) -> dict[str, CaseTally]:
    """Per stochastic case (on its channel) the verdicts of its units, cases in the order they first appear.
    (Every unit of a case carries the case's ``stochastic``.)"""
    tallies = {} if tallies is None else tallies
    for e in entries:
        if e.get("stochastic"):
            tallies.setdefault(_key(e), CaseTally()).add(e["verdict"])
    return tallies


@dataclass
class Baseline:
    """The baseline's units by id: each is read when this run's unit of the same id is compared with it,
    and those left over were removed. ``read`` gives a unit's diff fields from what the index holds."""

    run: dict
    totals: dict | None
    index: dict[str, Any]
    read: Callable[[Any], dict]
    latencies: dict[str, array] = field(default_factory=dict)
    tallies: dict[str, CaseTally] = field(default_factory=dict)

    @classmethod
    def of(cls, run: dict, totals: dict | None, units: Iterable[tuple[Any, dict]], read: Callable[[Any], dict],
           keys: Iterable[str] = ()) -> "Baseline":
        """The index over ``units`` ((where, unit) pairs); verdicts are tallied for the cases in ``keys``."""
        base = cls(run or {}, totals, {}, read)
        keys = set(keys)
        for where, u in units:
            base.index[u["unit_id"]] = where
            seconds = _seconds(u)
            if seconds is not None:
                base.latencies.setdefault(u.get("feature", ""), array("d")).append(seconds)
            if _key(u) in keys:
                base.tallies.setdefault(_key(u), CaseTally()).add(u["verdict"])
        return base

    def take(self, unit_id: str) -> dict | None:
        where = self.index.pop(unit_id, _MISSING)
        return None if where is _MISSING else self.read(where)

    def left(self) -> Iterator[dict]:
        for where in self.index.values():
            yield self.read(where)


_MISSING = object()


def in_memory(baseline: dict | None, keys: Iterable[str] = ()) -> Baseline | None:
    """A baseline results document held in memory (its units a list), as :class:`Baseline`."""
    if not baseline:
        return None
    units = {u["unit_id"]: u for u in baseline.get("units") or []}
    return Baseline.of(baseline.get("run"), baseline.get("totals"), ((u, u) for u in units.values()),
                       lambda u: u, keys)


class DiffBuilder:
    """diff.json a unit at a time: ``add`` each of this run's units (diff fields, in run order), then
    ``removed``; ``head`` is every key but the units, ``digest`` what the texts show."""

    def __init__(self, run_id: str, baseline: Baseline | None, tallies: dict[str, CaseTally]):
        self.run_id, self.baseline, self.tallies = run_id, baseline, tallies
        self.flaky = {k for k, t in tallies.items() if t.flaky}
        self.digest = DiffDigest(baseline=None if baseline is None else
                                 {"run_id": baseline.run.get("run_id"), "finished_at": baseline.run.get("finished_at")})
        self.latencies: dict[str, array] = {}

    def add(self, e: dict) -> dict:
        b = self.baseline.take(e["unit_id"]) if self.baseline is not None else None
        cls = "flaky" if _key(e) in self.flaky else classify(e, b)
        item: dict[str, Any] = {
            "unit_id": e["unit_id"], "case_id": e["case_id"], "feature": e.get("feature", ""), "class": cls,
            "verdict": e["verdict"], "reasons": _codes(e),
            "baseline_verdict": b["verdict"] if b else None, "baseline_reasons": _codes(b) if b else None,
        }
        if cls == "still_failing":
            item["codes_changed"] = _codes(e) != _codes(b)
        if b is not None and cls not in ("unchanged",):
            item["changed_rules"] = changed_rules(e, b)
            item["answer"] = _cut(e.get("answer"))
            item["baseline_answer"] = _cut(b.get("answer"))
            if e.get("followup_answer") is not None or b.get("followup_answer") is not None:
                # an async unit: the first answer only says a job was queued; the result is the follow-up's
                item["followup_answer"] = _cut(e.get("followup_answer"))
                item["baseline_followup_answer"] = _cut(b.get("followup_answer"))
        seconds = _seconds(e)
        if seconds is not None:
            self.latencies.setdefault(e.get("feature", ""), array("d")).append(seconds)
        self.digest.add(item)
        return item

    def removed(self) -> Iterator[dict]:
        """The baseline's units this run does not have (after every ``add``)."""
        for b in self.baseline.left() if self.baseline is not None else ():
            item = {"unit_id": b["unit_id"], "case_id": b["case_id"], "feature": b.get("feature", ""),
                    "class": "removed_case", "verdict": None, "reasons": [],
                    "baseline_verdict": b["verdict"], "baseline_reasons": _codes(b)}
            self.digest.add(item)
            yield item

    def head(self) -> dict:
        """Every key of diff.json but ``units`` (after the units are done)."""
        base = self.baseline
        cases = [{"case_id": k, "repeats": t.repeats, "flaky": t.flaky, "pass_rate": t.pass_rate,
                  "baseline_pass_rate": base.tallies[k].pass_rate if base and k in base.tallies else None}
                 for k, t in self.tallies.items()]
        features = sorted(set(self.latencies) | set(base.latencies if base else ()))
        latency = {f: {"run": self.latencies.get(f, array("d")).tolist(),
                       "baseline": (base.latencies.get(f, array("d")) if base else array("d")).tolist()}
                   for f in features}
        return {"schema_version": DIFF_SCHEMA_VERSION, "kind": "obai-e2e-diff", "run_id": self.run_id,
                "baseline": self.digest.baseline, "counts": self.digest.counts, "stochastic_cases": cases,
                "latency_by_feature": latency}


def build_diff(run_id: str, entries: list[dict], baseline: dict | None) -> dict:
    """diff.json for this run's ``entries`` against the ``baseline`` results (None: no baseline), in memory."""
    tallies = tally_stochastic(entries)
    builder = DiffBuilder(run_id, in_memory(baseline, tallies), tallies)
    units = [builder.add(e) for e in entries]
    units += list(builder.removed())
    return {**builder.head(), "units": units}


@dataclass
class DiffDigest:
    """What the texts need of a diff: its baseline, counts, the ids of each class but unchanged, the first
    units of each, and the units that fail now and did not before."""

    baseline: dict | None = None
    counts: dict = field(default_factory=lambda: {c: 0 for c in CLASSES})
    ids: dict = field(default_factory=dict)
    first: dict = field(default_factory=dict)
    failing: list = field(default_factory=list)

    def add(self, u: dict) -> None:
        cls = u["class"]
        self.counts[cls] += 1
        if cls != "unchanged":
            self.ids.setdefault(cls, []).append(u["unit_id"])
            kept = self.first.setdefault(cls, [])
            if len(kept) < FIRST_KEPT:
                kept.append({k: u.get(k) for k in ("unit_id", "reasons", "baseline_verdict")})
        if u.get("verdict") == "fail" and u.get("baseline_verdict") != "fail":
            self.failing.append(u["unit_id"])

    @classmethod
    def of(cls, head: dict, units: Iterable[dict]) -> "DiffDigest":
        """The digest of a diff read back (its head, its units one at a time)."""
        digest = cls(baseline=head.get("baseline"))
        for u in units:
            digest.add(u)
        return digest


def digest_of(diff: "dict | DiffDigest") -> DiffDigest:
    return diff if isinstance(diff, DiffDigest) else DiffDigest.of(diff, diff.get("units") or [])


def summary(diff: "dict | DiffDigest") -> dict:
    """The part results.json keeps: counts and the ids of each non-empty class but unchanged."""
    d = digest_of(diff)
    out = {"baseline_run_id": (d.baseline or {}).get("run_id"), "counts": d.counts}
    for cls in SHOWN:
        if d.ids.get(cls):
            out[cls] = d.ids[cls]
    return out


def failing_not_before(diff: "dict | DiffDigest") -> list[str]:
    """Units that fail now and did not fail in the baseline; without a baseline, every failed unit."""
    return list(digest_of(diff).failing)


def summary_line(diff: "dict | DiffDigest", limit: int = 5) -> str:
    """``changes since <run>: 2 new_fail (S4, MD2), 1 fixed (F5)`` — or why there is nothing to compare."""
    d = digest_of(diff)
    if d.baseline is None:
        return "changes: no baseline to compare with (no earlier finished run of this case set and filters, " \
               "and no --baseline): every unit is new"
    parts = []
    for cls in SHOWN:
        ids = d.ids.get(cls) or []
        if ids:
            shown = ", ".join(ids[:limit]) + (f", +{len(ids) - limit} more" if len(ids) > limit else "")
            parts.append(f"{len(ids)} {cls} ({shown})")
    head = f"changes since {d.baseline['run_id']}: "
    return head + ("; ".join(parts) if parts else f"none ({d.counts['unchanged']} unchanged)")


def markdown_lines(diff: "dict | DiffDigest", limit: int = FIRST_KEPT) -> list[str]:
    """The changes as Markdown list lines: new fails first, each with its codes."""
    d = digest_of(diff)
    if d.baseline is None:
        return ["- no baseline to compare with (no earlier finished run of this case set and filters, and no "
                "--baseline): every unit is new"]
    out = []
    for cls in SHOWN:
        n = d.counts.get(cls, 0)
        if not n:
            continue
        shown = []
        for u in d.first.get(cls, [])[:limit]:
            codes = ", ".join(u.get("reasons") or [])
            was = f"was {u['baseline_verdict']}" if u.get("baseline_verdict") else ""
            detail = inline("; ".join(x for x in (codes, was) if x))
            shown.append(f"{inline(u['unit_id'])} ({detail})" if detail else inline(u["unit_id"]))
        more = f", +{n - limit} more" if n > limit else ""
        out.append(f"- **{n} {cls}**: " + ", ".join(shown) + more)
    if not out:
        out.append(f"- no verdict changed ({d.counts['unchanged']} units unchanged)")
    return out
