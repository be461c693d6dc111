"""The specialists, as PydanticAI tools: arrivals, berth tariff and cargo manifest. Each answers
``{"status": "ok" | "error", "text": ...}``."""
from __future__ import annotations

from .book import DAYS_AT_BERTH, RATE_PER_METRE_DAY, VESSELS


class FeedDown(RuntimeError):
    """The arrivals feed did not answer."""


def vessel_eta(vessel: str, faults: set[str]) -> dict:
    if "eta_raises" in faults:
        raise FeedDown(f"arrivals feed timed out for {vessel}")
    v = VESSELS[vessel]
    return {"status": "ok", "text": f"{v['name']} is due at berth {v['berth']} on {v['eta']}."}


def berth_tariff(vessel: str, faults: set[str]) -> dict:
    v = VESSELS[vessel]
    fee = v["loa_m"] * RATE_PER_METRE_DAY * DAYS_AT_BERTH
    return {"status": "ok", "text": f"{v['name']} ({v['loa_m']} m) pays {fee:.2f} EUR for {DAYS_AT_BERTH} days "
                                    "at berth."}


def cargo_manifest(vessel: str, faults: set[str]) -> dict:
    if "manifest_down" in faults:
        return {"status": "error", "text": "", "detail": "manifest service unavailable"}
    v = VESSELS[vessel]
    return {"status": "ok", "text": f"{v['name']} carries {v['teu']} TEU."}


DESKS = {"vessel_eta": vessel_eta, "berth_tariff": berth_tariff, "cargo_manifest": cargo_manifest}
