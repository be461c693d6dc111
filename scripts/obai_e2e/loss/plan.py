"""The loss plan (``cases/plan.yaml``): mde, hops, partitions, n_min, and E2E-PLAN.md.

``n_min = ceil(16·s²/mde²)`` is computed on fractions built from the decimal text the plan
was written in: in floating point 16·0.1²/0.02² is 400.00000000000006 and would round up
to 401.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import yaml

from ..base import schema
from ..base.errors import ConfigError
from ..base.fsutil import atomic_write_text, sha256_bytes
from ..base.mdtable import cell
from ..base.paths import bundle_root, cases_file
from ..base.yamlio import Lines, line_for, load_yaml

SCHEMA = "plan.schema.json"
DEFAULT_MDE = Fraction(1, 20)
DEFAULT_S = Fraction(3, 10)
DEFAULT_SEED = "obai-e2e"
N_MIN_FLOOR = 2
PROVENANCES = ("synthetic", "korpus")
# Facets every unit has; a partition that does not name one takes only units with its default,
# so cli and ui units, and everyday and adversarial units, never share a partition by accident.
IMPLICIT_FACETS = {"channel": "cli", "kind": "everyday"}
PLAN_MD = "E2E-PLAN.md"


def exact(value) -> Fraction:
    """A number as an exact fraction of the decimal it was written as.

    Strings are parsed as written; a float is read through its shortest round-trip text
    (``repr``), which is the decimal a person typed for any value with up to 15 digits.
    """
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, Decimal)):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value))
    if isinstance(value, str):
        return Fraction(value.strip().replace("_", ""))
    raise TypeError(f"not a number: {value!r}")


def n_min(s, mde) -> int:
    """``ceil(16·s²/mde²)``, exactly, floored at 2."""
    s, m = exact(s), exact(mde)
    if m <= 0:
        raise ValueError("mde must be positive")
    if s < 0:
        raise ValueError("s must not be negative")
    return max(N_MIN_FLOOR, math.ceil(16 * s * s / (m * m)))


def decimal_text(value: Fraction, digits: int = 6) -> str:
    """A fraction as a short decimal: exact when it has a finite expansion, else ``digits`` places."""
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den == 1:
        text = str(Decimal(value.numerator) / Decimal(value.denominator))
        if "E" in text or "e" in text:
            text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return f"{float(value):.{digits}f}".rstrip("0").rstrip(".")


def labels_key(labels: dict) -> str:
    """``facet=value,facet=value`` with facets in name order: how a partition is written."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


@dataclass(frozen=True)
class Hop:
    """One crossing of a system boundary and how to tell its outcomes apart."""

    id: str
    source: str
    target: str
    signal: str
    correct: str
    flake: str
    real_error: str


@dataclass(frozen=True)
class Partition:
    """A slice of the unit space with its weight (frequency × damage) and sample size."""

    labels: dict
    frequency: Fraction
    damage: Fraction
    s: Fraction
    s_from_pilot: bool
    n_min: int
    description: str = ""

    @property
    def key(self) -> str:
        return labels_key(self.labels)

    @property
    def weight_exact(self) -> Fraction:
        return self.frequency * self.damage

    @property
    def weight(self) -> float:
        return float(self.weight_exact)

    def contains(self, unit_labels: dict) -> bool:
        for k, v in self.labels.items():
            if unit_labels.get(k, IMPLICIT_FACETS.get(k)) != v:
                return False
        return all(unit_labels.get(k, d) == d for k, d in IMPLICIT_FACETS.items() if k not in self.labels)

    @property
    def effective_labels(self) -> dict:
        """Its labels with the implicit facets it does not name (channel=cli, kind=everyday)."""
        return {**IMPLICIT_FACETS, **self.labels}

    @property
    def adversarial(self) -> bool:
        return self.effective_labels["kind"] == "adversarial"


@dataclass(frozen=True)
class Plan:
    """A loaded, checked plan."""

    path: Path
    sha256: str
    mde_exact: Fraction
    default_s: Fraction
    seed: str
    hops: tuple[Hop, ...]
    partitions: tuple[Partition, ...]
    description: str = ""
    pilot: dict | None = None

    @property
    def pool(self) -> str:
        return (self.pilot or {}).get("pool", "max")

    @property
    def mde(self) -> float:
        return float(self.mde_exact)

    @property
    def budget(self) -> int:
        return sum(p.n_min for p in self.partitions)

    def default_n_min(self) -> int:
        return n_min(self.default_s, self.mde_exact)


def default_plan_path() -> Path:
    return cases_file("plan.yaml", "OBAI_E2E_PLAN")


def _number_texts(text: str) -> dict[tuple, str]:
    """The source text of every int/float scalar, by path."""
    out: dict[tuple, str] = {}
    numeric = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")

    def walk(node, path):
        if isinstance(node, yaml.ScalarNode):
            if node.tag in numeric:
                out[path] = node.value
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(v, path + (k.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, path + (i,))

    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is not None:
        walk(node, ())
    return out


def _disjoint(a: dict, b: dict) -> bool:
    return any(k in b and b[k] != v for k, v in a.items())


def parse_plan(data, lines: Lines, text: str, source: str, path: Path) -> Plan:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with 'version', 'hops' and 'partitions'")

    def label(p: tuple) -> str | None:
        if len(p) >= 2 and p[0] == "hops" and isinstance(p[1], int):
            return f"hop #{p[1] + 1}"
        if len(p) >= 2 and p[0] == "partitions" and isinstance(p[1], int):
            return f"partition #{p[1] + 1}"
        return None

    schema.check(data, SCHEMA, source=source, lines=lines, item_label=label)
    texts = _number_texts(text)

    def num(p: tuple, value) -> Fraction:
        raw = texts.get(p)
        try:
            return exact(raw) if raw is not None else exact(value)
        except (ValueError, ZeroDivisionError):
            return exact(value)

    def fail(p: tuple, message: str) -> ConfigError:
        line = line_for(lines, p)
        where = f"{source}:{line}" if line else source
        return ConfigError(f"{where}: field /{'/'.join(map(str, p))}: {message}")

    mde = num(("mde",), data["mde"]) if "mde" in data else DEFAULT_MDE
    default_s = num(("default_s",), data["default_s"]) if "default_s" in data else DEFAULT_S

    hops, seen = [], {}
    for i, h in enumerate(data["hops"]):
        if h["id"] in seen:
            raise fail(("hops", i, "id"),
                       f"duplicate hop id {h['id']!r} (first at /hops/{seen[h['id']]}); ids must be unique")
        seen[h["id"]] = i
        hops.append(Hop(h["id"], h["from"], h["to"], h["signal"], h["correct"], h["flake"], h["real_error"]))

    partitions: list[Partition] = []
    for i, p in enumerate(data["partitions"]):
        labels = dict(p["labels"])
        labels.setdefault("provenance", "synthetic")
        if labels["provenance"] not in PROVENANCES:
            raise fail(("partitions", i, "labels", "provenance"),
                       f"{labels['provenance']!r} is not one of {list(PROVENANCES)}")
        for j, other in enumerate(partitions):
            if other.labels == labels:
                raise fail(("partitions", i, "labels"), f"the same labels as /partitions/{j}; each partition once")
            if not _disjoint(other.effective_labels, {**IMPLICIT_FACETS, **labels}):
                raise fail(("partitions", i, "labels"),
                           f"{{{labels_key(labels)}}} can hold the same units as /partitions/{j} "
                           f"{{{labels_key(other.labels)}}}: partitions must differ in the value of a shared facet, "
                           "or a unit would count twice in the suite score")
        has_s = "s" in p
        s = num(("partitions", i, "s"), p["s"]) if has_s else default_s
        partitions.append(Partition(
            labels=labels, frequency=num(("partitions", i, "frequency"), p["frequency"]),
            damage=num(("partitions", i, "damage"), p["damage"]), s=s, s_from_pilot=has_s,
            n_min=n_min(s, mde), description=p.get("description", ""),
        ))
    return Plan(path=path, sha256=sha256_bytes(text.encode("utf-8")), mde_exact=mde, default_s=default_s,
                seed=data.get("seed", DEFAULT_SEED), hops=tuple(hops), partitions=tuple(partitions),
                description=data.get("description", ""), pilot=data.get("pilot"))


def load_plan(path: Path | None = None) -> Plan:
    path = Path(path) if path else default_plan_path()
    source = str(path)
    data, lines = load_yaml(path, label=source)
    return parse_plan(data, lines, path.read_text(encoding="utf-8"), source, path)


# ------------------------------------------------------------------------------ E2E-PLAN.md

def _row(values) -> str:
    return "| " + " | ".join(cell(v) for v in values) + " |\n"


def _head(columns) -> str:
    return _row(columns) + "|" + "---|" * len(columns) + "\n"


def render_plan_md(plan: Plan, cap: Fraction | None = None) -> str:
    """E2E-PLAN.md: deterministic for a given plan file (and the catalog's adversarial cap)."""
    mde = decimal_text(plan.mde_exact)
    s0 = decimal_text(plan.default_s)
    try:
        source = plan.path.resolve().relative_to(bundle_root())
    except ValueError:
        source = plan.path.name
    out = ["# E2E plan\n\n",
           f"_Generated from `{source}` by `obai-e2e plan-loss`; edit the plan, not this file._\n\n"]
    if plan.description:
        out.append(plan.description.strip() + "\n\n")
    out.append("## Minimum detectable effect\n\n")
    out.append(f"We want to detect loss deltas of {mde} or more reliably (mde = {mde}, declared before sampling).\n\n")
    out.append(f"Each partition needs n_min = ceil(16 · s² / mde²) units, where s is the spread of the unit "
               f"losses between the units of that partition: a pilot estimate where the plan gives one, "
               f"otherwise {s0}. n_min is never below {N_MIN_FLOOR}. The sample budget is the sum of n_min over "
               "the partitions; it follows from the mde, not the other way round.\n\n")
    out.append("## Hops\n\n")
    out.append("Every turn crosses these boundaries; each hop has one signal and a way to tell a correct "
               "outcome from a flake and from a real error.\n\n")
    out.append(_head(["id", "from", "to", "signal", "correct", "flake", "real error"]))
    for h in plan.hops:
        out.append(_row([h.id, h.source, h.target, h.signal, h.correct, h.flake, h.real_error]))
    out.append("\n## Partitions\n\n")
    out.append("Weight = frequency × damage. Provenance is always a facet: synthetic and korpus units are "
               "aggregated separately. So are the channel (cli, ui) and the kind (everyday, adversarial): a "
               "partition that does not name them holds only cli units of everyday cases.\n\n")
    default_n = plan.default_n_min()
    out.append(f"n_min is shown for the partition's s and, beside it, for the default s = {s0} "
               f"(n_min {default_n}).\n\n")
    pilot = plan.pilot or {}
    if pilot.get("runs"):
        out.append(f"Pilot estimates: {pilot.get('repeats', len(pilot['runs']))} run(s) of {pilot.get('date', '?')} "
                   f"({', '.join(f'`{r}`' for r in pilot['runs'])}), categories pooled by {plan.pool}; "
                   "written by `obai-e2e pilot`.\n\n")
    out.append(_head(["partition", "frequency", "damage", "weight", "s", "s from", "n_min", f"n_min at s = {s0}"]))
    for p in plan.partitions:
        out.append(_row([p.key, decimal_text(p.frequency), decimal_text(p.damage), decimal_text(p.weight_exact),
                         decimal_text(p.s), "pilot" if p.s_from_pilot else "default", p.n_min, default_n]))
    out.append(f"\nSample budget: Σ n_min = {plan.budget} units over {len(plan.partitions)} partitions "
               f"({default_n * len(plan.partitions)} at the default s).\n\n")
    out.append(_cap_section(plan, cap))
    out.append("## A note on the seed's arithmetic\n\n")
    out.append(f"The original instructions say that s = 0.3 gives n_min ≈ 58. That is an arithmetic slip: "
               f"16 · 0.3² / 0.05² = 16 · 0.09 / 0.0025 = {n_min('0.3', '0.05')}. (About 58 is what a spread of "
               f"s ≈ 0.095 gives: 16 · 0.095² / 0.05² = 57.76, so {n_min('0.095', '0.05')}.) This plan uses the "
               "formula as written.\n")
    return "".join(out)


def _cap_section(plan: Plan, cap: Fraction | None) -> str:
    """How much the adversarial partitions may weigh in the suite score, with the plan's own numbers."""
    adversarial = [p for p in plan.partitions if p.adversarial]
    if cap is None and not adversarial:
        return ""
    out = ["## Adversarial cap\n\n"]
    if cap is None:
        out.append("The loss catalog sets no cap: the adversarial partitions below weigh what the plan gives them.\n\n")
        return "".join(out)
    c = decimal_text(cap)
    out.append(f"Attacks are weighed by the catalog's cap: the adversarial partitions together weigh at most {c} of "
               "the suite score, so a red-team set cannot drown the everyday signal. When their share of the weight "
               "of the partitions with a loss is higher, each adversarial weight is multiplied by "
               "f = cap · W_everyday / ((1 − cap) · W_adversarial), which makes the share exactly the cap; "
               "suite.json shows the factor and each partition's effective weight.\n\n")
    for prov in PROVENANCES:
        parts = [p for p in plan.partitions if p.labels.get("provenance") == prov]
        adv = [p for p in parts if p.adversarial]
        if not adv:
            continue
        w_a = sum((p.weight_exact for p in adv), Fraction(0))
        w_e = sum((p.weight_exact for p in parts if not p.adversarial), Fraction(0))
        share = w_a / (w_a + w_e)
        factor = cap * w_e / ((1 - cap) * w_a) if share > cap and w_e else Fraction(1)
        out.append(f"With every {prov} partition scored: adversarial weight {decimal_text(w_a)} of "
                   f"{decimal_text(w_a + w_e)} (share {decimal_text(share, 4)}); "
                   + (f"above the cap, so f = {decimal_text(factor, 4)}.\n\n" if factor != 1 else
                      "within the cap, so nothing is scaled.\n\n"))
        out.append(_head(["partition", "weight", "effective weight"]))
        for p in adv:
            out.append(_row([p.key, decimal_text(p.weight_exact), decimal_text(p.weight_exact * factor, 6)]))
        out.append("\n")
    return "".join(out)


def write_plan_md(plan: Plan, path: Path | None = None, cap: Fraction | None = None) -> Path:
    path = Path(path) if path else bundle_root() / PLAN_MD
    atomic_write_text(path, render_plan_md(plan, cap))
    return path
