"""English words for the loss layer's German keys and status values.

The seed's terms stay as JSON keys and values where the schemas have them (``unterbelegt``,
``unbewertbar``); everything a person reads uses these labels (references/loss-layer.md
lists both).
"""
from __future__ import annotations

STATUS_LABELS = {"scored": "scored", "unterbelegt": "under-populated", "suppressed": "suppressed",
                 "unbewertbar": "not assessable"}


def status_label(status: object) -> str:
    """``under-populated`` for ``unterbelegt``; any other value as it is."""
    return STATUS_LABELS.get(status, str(status)) if isinstance(status, str) else str(status)
