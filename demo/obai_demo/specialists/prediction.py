"""prediction_market_analysis: prediction markets matched by keywords in the request."""
from __future__ import annotations

from typing import Any

from .. import bundle
from ..routing import first_position
from . import envelope

MAX_MARKETS = 3


def match(request: str) -> list[dict[str, Any]]:
    """Markets whose keywords occur in ``request``: most keywords first, then by volume."""
    scored = []
    for market in bundle.prediction_markets():
        score = sum(1 for kw in market["keywords"] if first_position(request, (kw,)) is not None)
        if score:
            scored.append((-score, -market["volume_usd"], market["slug"], market))
    return [m for *_, m in sorted(scored)][:MAX_MARKETS]


def render(market: dict[str, Any]) -> str:
    return "\n".join([
        f"Market: {market['slug']}",
        f"Condition ID: {market['condition_id']}",
        f"Question: {market['question']}",
        f"YES price: {market['yes_price'] * 100:.1f}%",
        f"Volume: ${market['volume_usd']:,}",
        f"End date: {market['end_date']}",
    ])


def analyse(request: str) -> dict[str, Any]:
    markets = match(request)
    matched = bool(markets)
    if not matched:
        markets = sorted(bundle.prediction_markets(), key=lambda m: -m["volume_usd"])[:MAX_MARKETS]
        header = "No market matched the request's keywords; the most active markets:"
    else:
        header = f"Matched {len(markets)} prediction market{'s' if len(markets) > 1 else ''}:"
    text = header + "\n\n" + "\n\n".join(render(m) for m in markets)
    fields = ("slug", "condition_id", "question", "yes_price", "volume_usd", "end_date")
    structured = {"matched": matched, "markets": [{k: m[k] for k in fields} for m in markets]}
    return envelope(text, structured)
