"""Personal data in korpus cases: every packet of a korpus case is pseudonymised before it is stored.

The rule itself lives in ``obai_e2e.loss.pii``; the names come from the target
configuration's ``privacy`` section. Without that section (preflight refuses korpus cases
then) e-mail addresses, phone, IBAN and card numbers are still replaced.
"""
from __future__ import annotations

from pathlib import Path

from ..base.paths import runs_root


def protect_packet(packet: dict, case, config, run_dir: Path | None = None) -> dict:
    """Return the packet as it may be stored; synthetic cases pass unchanged."""
    if getattr(case, "provenance", "synthetic") != "korpus":
        return packet
    from ..base.pii import protect

    if run_dir is None:
        run_dir = runs_root() / packet["run_id"]
    privacy = getattr(config, "privacy", None)
    return protect(packet, Path(run_dir), privacy.names if privacy is not None else ())
