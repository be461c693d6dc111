"""The port's figures (hand-written): vessels due, their berths, cargo and the berth tariff."""
from __future__ import annotations

VESSELS = {
    "aurora": {"name": "MV Aurora", "eta": "2026-06-02 06:00", "berth": 4, "teu": 1840, "loa_m": 212},
    "kestrel": {"name": "MV Kestrel", "eta": "2026-06-03 14:30", "berth": 7, "teu": 960, "loa_m": 148},
    "solstice": {"name": "MV Solstice", "eta": "2026-06-05 09:15", "berth": 2, "teu": 3120, "loa_m": 266},
}
RATE_PER_METRE_DAY = 55.0  # EUR per metre of length overall and day at berth
DAYS_AT_BERTH = 2
PORT_WORDS = ("vessel", "ship", "berth", "port", "cargo", "arrive", "arrival", "due", "eta", "tariff", "fee",
              "dock", "container", "teu", *VESSELS)


def vessel_named(text: str) -> str | None:
    low = text.lower()
    return next((key for key in VESSELS if key in low), None)
