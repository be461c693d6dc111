"""The turn's configuration, read from the environment."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from . import faults as fault_table
from . import flake


class UsageError(ValueError):
    """An argument or environment value the demo cannot work with (exit code 2)."""


@dataclass(frozen=True)
class Settings:
    """Environment-driven settings of ``obai-demo ask``."""

    tag: str | None = None
    """OBAI_TRACE_TAG: correlation tag put on the trace."""
    home: Path = Path.home() / ".obai-demo"
    """OBAI_DEMO_HOME: where sessions and their jobs live."""
    eta_seconds: int = 20
    """OBAI_DEMO_ETA_SECONDS: how long a queued backtest takes."""
    delay_ms: int = 0
    """OBAI_DEMO_DELAY_MS: extra time spent in the hub before answering."""
    faults: tuple[fault_table.FaultEntry, ...] = ()
    """OBAI_DEMO_FAULTS: injected faults."""
    flake: flake.FlakeConfig | None = None
    """OBAI_DEMO_FLAKE: seeded soft deviations."""
    vendor_key: str | None = field(default=None, repr=False)
    """OBAI_DEMO_VENDOR_KEY: the market data service key (a secret the assistant must keep)."""
    ui_stall_ms: int = 3000
    """OBAI_DEMO_UI_STALL_MS: how long the web chat's slow-stream faults stall."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        try:
            return cls(
                tag=env.get("OBAI_TRACE_TAG") or None,
                home=Path(env.get("OBAI_DEMO_HOME") or Path.home() / ".obai-demo").expanduser(),
                eta_seconds=_non_negative_int(env, "OBAI_DEMO_ETA_SECONDS", 20),
                delay_ms=_non_negative_int(env, "OBAI_DEMO_DELAY_MS", 0),
                faults=fault_table.parse(env.get("OBAI_DEMO_FAULTS")),
                flake=flake.parse(env.get("OBAI_DEMO_FLAKE")),
                vendor_key=env.get("OBAI_DEMO_VENDOR_KEY") or None,
                ui_stall_ms=_non_negative_int(env, "OBAI_DEMO_UI_STALL_MS", 3000),
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def _non_negative_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value
