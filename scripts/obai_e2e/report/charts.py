"""Inline SVG charts for report.html: no script, no library, no network; every label escaped.

Each chart comes with a text alternative: an SVG ``<title>``/``<desc>`` pair that screen
readers announce, and the same numbers as a table the page shows under the chart.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup, escape

VERDICT_COLOURS = {"pass": "#2e7d32", "needs_review": "#b26a00", "fail": "#c62828", "inconclusive": "#6d6d6d"}
NEW, BASE = "#1565c0", "#9e9e9e"


@dataclass
class Chart:
    """One chart: its SVG, and the same numbers as table rows (the text alternative)."""

    key: str
    title: str
    svg: Markup
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _svg(key: str, width: int, height: int, title: str, desc: str, body: list[str]) -> Markup:
    t, d = f"chart-{key}-title", f"chart-{key}-desc"
    head = (f'<svg class="chart" viewBox="0 0 {width} {height}" '
            f'width="100%" role="img" aria-labelledby="{t} {d}" id="chart-{key}">'
            f'<title id="{t}">{escape(title)}</title><desc id="{d}">{escape(desc)}</desc>')
    return Markup(head + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 11, cls: str = "lbl") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" class="{cls}">'
            f"{escape(text)}</text>")


LABEL_CHARS = 34  # per line of a row label; a longer label is wrapped, never cut


def wrap(text: str, width: int = LABEL_CHARS) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after a comma or before a ``×`` where it can,
    inside a word only where a piece alone is longer; nothing is dropped."""
    pieces = [p for p in text.replace(" × ", " \0× ").replace(",", ",\0").split("\0") if p]
    lines: list[str] = []
    for piece in pieces:
        while len(piece) > width:
            lines.append(piece[:width])
            piece = piece[width:]
        if lines and len(lines[-1]) + len(piece) <= width and not piece.startswith("× "):
            lines[-1] += piece
        else:
            lines.append(piece)
    return lines or [""]


def _label(x: float, y: float, text: str, *, anchor: str = "end", size: int = 10,
           chars: int = LABEL_CHARS) -> str:
    """A row label wrapped into lines (the first on ``y``), with the whole text as its tooltip."""
    lines = wrap(text, chars)
    spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if i == 0 else size + 2}">{escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" class="lbl">'
            f"<title>{escape(text)}</title>{spans}</text>")


def verdict_history(runs: list[tuple[str, dict]]) -> Chart | None:
    """Stacked bars of verdict counts per run, oldest left; ``runs`` is (run id, summary) newest first."""
    if not runs:
        return None
    runs = list(reversed(runs))
    order = ("pass", "needs_review", "fail", "inconclusive")
    width, height, left, bottom, top = 640, 220, 40, 48, 16
    most = max((sum(int(s.get(v, 0) or 0) for v in order) for _, s in runs), default=1) or 1
    slot = (width - left - 10) / len(runs)
    bar = min(48.0, slot * 0.7)
    body = [f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" class="axis"/>',
            _text(left - 6, top + 4, str(most), anchor="end"), _text(left - 6, height - bottom, "0", anchor="end")]
    rows = []
    for i, (run_id, s) in enumerate(runs):
        x = left + i * slot + (slot - bar) / 2
        y = height - bottom
        for v in order:
            n = int(s.get(v, 0) or 0)
            if not n:
                continue
            h = (height - bottom - top) * n / most
            y -= h
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                        f'fill="{VERDICT_COLOURS[v]}"><title>{escape(f"{run_id}: {n} {v}")}</title></rect>')
        label = run_id.split("/")[-1] if "/" in run_id else run_id
        body.append(_text(x + bar / 2, height - bottom + 14, label, anchor="middle", size=10))
        rows.append([run_id] + [str(int(s.get(v, 0) or 0)) for v in order])
    for j, v in enumerate(order):
        lx = left + j * 120
        body.append(f'<rect x="{lx}" y="{height - 18}" width="10" height="10" fill="{VERDICT_COLOURS[v]}"/>')
        body.append(_text(lx + 14, height - 9, v.replace("_", " ")))
    desc = "; ".join(f"{r[0]}: " + ", ".join(f"{n} {v}" for v, n in zip(order, r[1:])) for r in rows)
    return Chart("history", "Verdicts over the last runs",
                 _svg("history", width, height, "Verdicts over the last runs (oldest left)", desc, body),
                 ["run", *order], rows)


def _scale(values: list[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1
    return lo, hi


def latency_strip(features: dict[str, tuple[list[float], list[float]]]) -> Chart | None:
    """Per feature: this run's unit latencies (seconds) as dots beside the baseline's."""
    if not features or not any(new for new, _ in features.values()):
        return None
    names = sorted(features)
    width, left, right, chars = 640, 150, 20, 22
    heights = [max(28, 13 * len(wrap(name, chars)) + 14) for name in names]
    height = 30 + sum(heights) + 30
    values = [v for new, base in features.values() for v in new + base]
    lo, hi = 0.0, max(values) * 1.05 if values else 1.0
    span = (hi - lo) or 1.0

    def px(v: float) -> float:
        return left + (width - left - right) * (v - lo) / span

    body = []
    rows = []
    y = 30
    for name, h in zip(names, heights):
        new, base = features[name]
        body.append(_label(left - 8, y + 4, name, size=11, chars=chars))
        body.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" class="grid"/>')
        for v, of in _dots(base):
            body.append(f'<circle cx="{px(v):.1f}" cy="{y + 5}" r="3" fill="{BASE}" fill-opacity="0.7">'
                        f"<title>{escape(f'{name} baseline: {v:.2f} s{of}')}</title></circle>")
        for v, of in _dots(new):
            body.append(f'<circle cx="{px(v):.1f}" cy="{y - 5}" r="3" fill="{NEW}" fill-opacity="0.8">'
                        f"<title>{escape(f'{name} this run: {v:.2f} s{of}')}</title></circle>")
        rows.append([name, _median(new), _median(base), str(len(new)), str(len(base))])
        y += h
    axis_y = height - 24
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{width - right}" y2="{axis_y}" class="axis"/>')
    for k in range(5):
        v = lo + span * k / 4
        body.append(_text(px(v), axis_y + 14, f"{v:.1f} s", anchor="middle", size=10))
    body.append(f'<circle cx="{left}" cy="12" r="4" fill="{NEW}"/>')
    body.append(_text(left + 8, 16, "this run"))
    body.append(f'<circle cx="{left + 90}" cy="12" r="4" fill="{BASE}"/>')
    body.append(_text(left + 98, 16, "baseline"))
    desc = "; ".join(f"{r[0]}: median {r[1]} s now, {r[2]} s in the baseline" for r in rows)
    return Chart("latency", "Latency per feature",
                 _svg("latency", width, height, "Latency per feature, this run against the baseline", desc, body),
                 ["feature", "median s (this run)", "median s (baseline)", "units", "baseline units"], rows)


STRIP_DOTS = 200  # dots per feature and side; more units are drawn as this many evenly spaced quantiles


def _dots(values: list[float]) -> list[tuple[float, str]]:
    """The dots of one feature's latencies: every value, or for more than ``STRIP_DOTS`` of them the
    quantiles that many dots stand for (each tooltip says which), so the chart stays the same size."""
    if len(values) <= STRIP_DOTS:
        return [(v, "") for v in values]
    ordered = sorted(values)
    last = len(ordered) - 1
    return [(ordered[round(k * last / (STRIP_DOTS - 1))],
             f" (quantile {k / (STRIP_DOTS - 1):.3f} of {len(ordered):,} units)") for k in range(STRIP_DOTS)]


def _median(values: list[float]) -> str:
    if not values:
        return "—"
    s = sorted(values)
    m = len(s) // 2
    return f"{(s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2):.2f}"


def delta_intervals(cells: list[dict], mde: float | None) -> Chart | None:
    """Per compared cell: delta with its interval (delta ± z·se_delta) against the mde line."""
    cells = [c for c in cells if _finite(c.get("ci_low")) and _finite(c.get("ci_high")) and _finite(c.get("delta"))]
    if not cells:
        return None
    cells = sorted(cells, key=lambda c: -c["ci_low"])[:25]
    width, left, right = 640, 230, 20
    labels = [f"{c.get('partition', '')} × {c.get('category', '')}" for c in cells]
    heights = [max(22, 12 * len(wrap(label)) + 10) for label in labels]
    height = 24 + sum(heights) + 34
    lo, hi = _scale([0.0] + [c["ci_low"] for c in cells] + [c["ci_high"] for c in cells] +
                    ([mde] if _finite(mde) else []))
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad

    def px(v: float) -> float:
        return left + (width - left - right) * (v - lo) / (hi - lo)

    body = [f'<line x1="{px(0):.1f}" y1="12" x2="{px(0):.1f}" y2="{height - 28}" class="axis"/>']
    if _finite(mde):
        body.append(f'<line x1="{px(mde):.1f}" y1="12" x2="{px(mde):.1f}" y2="{height - 28}" class="mde"/>')
        body.append(_text(px(mde) + 3, 10, f"mde {mde:g}", size=10))
    rows = []
    y = 24
    for c, label, h in zip(cells, labels, heights):
        listed = c["ci_low"] > (mde if _finite(mde) else math.inf)
        colour = "#c62828" if listed else NEW
        body.append(_label(left - 8, y + 4, label))
        body.append(f'<line x1="{px(c["ci_low"]):.1f}" y1="{y}" x2="{px(c["ci_high"]):.1f}" y2="{y}" '
                    f'stroke="{colour}" stroke-width="2"/>')
        tip = f"{label}: delta {c['delta']:.4f}, interval {c['ci_low']:.4f} to {c['ci_high']:.4f}"
        body.append(f'<circle cx="{px(c["delta"]):.1f}" cy="{y}" r="3.5" fill="{colour}">'
                    f"<title>{escape(tip)}</title></circle>")
        rows.append([label, f"{c['delta']:.4f}", f"{c['ci_low']:.4f}", f"{c['ci_high']:.4f}",
                     "yes" if listed else "no"])
        y += h
    axis_y = height - 24
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        body.append(_text(px(v), axis_y + 14, f"{v:.2f}", anchor="middle", size=10))
    desc = (f"{len(cells)} compared cells; a red interval lies wholly above the mde and is a listed regression. " +
            "; ".join(f"{r[0]}: delta {r[1]} [{r[2]}, {r[3]}]" for r in rows))
    return Chart("loss", "Loss change per partition and category",
                 _svg("loss", width, height, "Change of loss against the baseline, with intervals and the mde line",
                      desc, body),
                 ["cell", "delta", "ci_low", "ci_high", "listed"], rows)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
