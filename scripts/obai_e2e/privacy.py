"""Personal data in korpus cases (filled in by the loss layer's PII rule)."""
from __future__ import annotations


def protect_packet(packet: dict, case, config) -> dict:
    """Return the packet as it may be stored; synthetic cases pass unchanged."""
    return packet
