"""Personal data in korpus cases: every packet of a korpus case is pseudonymised before it is stored.

The rule itself lives in ``base.pii``; the names come from the target configuration's
``privacy`` section. Without that section (preflight refuses korpus cases then) e-mail
addresses, phone, IBAN and card numbers are still replaced.
"""
from __future__ import annotations

from pathlib import Path

from ..base.pii import protect, pseudonymizer_for
from ..config.cases import Case
from ..config.target import TargetConfig


def protect_packet(packet: dict, case: Case, config: TargetConfig, run_dir: Path) -> dict:
    """Return the packet's JSON form as it may be stored; synthetic cases pass unchanged."""
    if case.provenance != "korpus":
        return packet
    names = config.privacy.names if config.privacy is not None else ()
    return protect(packet, Path(run_dir), names)


def protect_data(data, case: Case, config: TargetConfig, run_dir: Path):
    """Any other data stored for a unit (its trace snapshots), pseudonymised as its packet is."""
    if case.provenance != "korpus":
        return data
    names = config.privacy.names if config.privacy is not None else ()
    return pseudonymizer_for(Path(run_dir), names).data(data)
