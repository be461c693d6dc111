"""Faults a turn can be run with (HARBOR_FAULTS, comma-separated), each aimed at one rule of the harness."""
from __future__ import annotations

import os

FAULTS = {
    "strict_screen": "guardrail.false_refusal: the screen holds every question that names a vessel",
    "skip_tariff": "routing.specialist_missing: the tariff desk is not asked although the question needs it",
    "eta_raises": "trace.error_span: the arrivals desk raises; the turn exits 70",
    "manifest_down": "specialist.cargo_manifest.tool_error: the manifest desk answers status error",
    "stray_figure": "hub.unverified_number:4.5: the reply adds a draught no desk gave",
}


def active() -> set[str]:
    names = {n.strip() for n in os.environ.get("HARBOR_FAULTS", "").split(",") if n.strip()}
    unknown = names - FAULTS.keys()
    if unknown:
        raise ValueError(f"HARBOR_FAULTS: unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}")
    return names
