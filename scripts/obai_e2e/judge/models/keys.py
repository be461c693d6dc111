"""The judges' keys: read from the environment when asked, kept out of every text stored.

A judge names the variable that holds its key (``api_key_env``); the key itself is never
written anywhere. ``redactor_for`` masks the named variables' values (and any variable
named like a secret) in messages and records; ``mask_keys`` masks a key a reply echoed;
``preflight`` checks, before anything is asked, that every key is set and every judge
command exists.
"""
from __future__ import annotations

import os
import shlex
import shutil

from ...base.errors import ConfigError
from ...base.redact import MARK, Redactor
from ...config.target import DEFAULT_REDACT
from .config import PanelConfig


def redactor_for(cfg: PanelConfig, env) -> Redactor:
    names = [j.api_key_env for j in cfg.judges if j.api_key_env]
    return Redactor(env, [*DEFAULT_REDACT, *names])


def key_values(cfg: PanelConfig, env) -> list[str]:
    """The keys the panel's judges would send, longest first."""
    values = {env.get(j.api_key_env) for j in cfg.judges if j.api_key_env}
    return sorted((v for v in values if v), key=len, reverse=True)


def mask_keys(text: str, keys: list[str]) -> tuple[str, bool]:
    hit = False
    for k in keys:
        if k in text:
            text, hit = text.replace(k, MARK), True
    return text, hit


def preflight(cfg: PanelConfig, env) -> None:
    """Every key is set and every command exists, before anything is asked."""
    for i, j in enumerate(cfg.judges):
        where = f"{cfg.source}: judge {j.name!r}, field /judges/{i}"
        if j.provider == "command":
            exe = shlex.split(j.command)[0]
            found = shutil.which(exe) if "/" not in exe else (exe if os.access(exe, os.X_OK) else None)
            if not found:
                raise ConfigError(f"{where}/command: {exe!r} is not found or not executable")
        elif j.api_key_env and not env.get(j.api_key_env):
            raise ConfigError(f"{where}/api_key_env: the environment variable {j.api_key_env} is not set; "
                              "it must hold the judge's API key (keys are read from the environment only)")
