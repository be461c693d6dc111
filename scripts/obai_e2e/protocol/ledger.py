"""The holdout ledger (``catalogs/holdout-ledger.json``): every open of a holdout set, in order.

Read by the freeze (a freeze with a holdout result may not change) and by the holdout
protocol, which appends the one open. With OBAI_E2E_SEAL_KEY set the ledger carries an
HMAC-SHA256 of its entries, and the holdout protocol takes only a ledger signed with the key
(:func:`signed_entries`): an open written into it by hand lets no run load the holdout.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

from ..base.errors import HoldoutSealed
from ..base.fsutil import atomic_write_json
from ..base.paths import bundle_root
from ..base.seal_key import KEY_ENV, seal_key

LEDGER = "catalogs/holdout-ledger.json"
LEDGER_VERSION = 1


def ledger_path(root: Path | None = None) -> Path:
    return (root or bundle_root()) / LEDGER


def _read(root: Path | None) -> dict:
    path = ledger_path(root)
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def ledger_entries(root: Path | None = None) -> list[dict]:
    return _read(root).get("opens", [])


def _mac(opens: list, key: bytes) -> str:
    text = json.dumps({"schema_version": LEDGER_VERSION, "opens": opens}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def signed_entries(root: Path | None = None) -> list[dict]:
    """The ledger's entries; with the key set, only when the ledger's signature is right (else refused)."""
    data = _read(root)
    opens = data.get("opens", [])
    key = seal_key()
    if key is None or not data:
        return opens
    mac = data.get("mac")
    if not isinstance(mac, dict) or not isinstance(mac.get("value"), str) \
            or not hmac.compare_digest(mac["value"], _mac(opens, key)):
        raise HoldoutSealed(f"{ledger_path(root)} is not signed with the key in {KEY_ENV} (written or edited "
                            "without it): its opens are not evidence, and the holdout stays sealed")
    return opens


def append_entry(entry: dict, root: Path | None = None) -> None:
    opens = signed_entries(root) + [entry]
    data: dict = {"schema_version": LEDGER_VERSION, "opens": opens}
    key = seal_key()
    if key is not None:
        data["mac"] = {"alg": "hmac-sha256", "value": _mac(opens, key)}
    atomic_write_json(ledger_path(root), data)


def holdout_result_exists(entry: dict) -> bool:
    run = entry.get("holdout_run")
    return bool(run) and (Path(run) / "results.json").exists()
