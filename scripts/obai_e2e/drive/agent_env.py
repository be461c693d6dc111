"""The agent's environment: what of the harness's own environment reaches the agent under test.

The agent gets the harness's environment without the secrets the harness holds for
itself: the key that signs a run's seal (``OBAI_E2E_SEAL_KEY``, always), every variable a
judges file names (the panel file in use — by default
``catalogs/judges.yaml`` or ``$OBAI_E2E_JUDGES`` — and the panel this run asks), and every
variable whose name looks secret (``redact.env_name_patterns``: ``*KEY*``, ``*TOKEN*``, …),
unless the target declares that it needs it in ``target.env_passthrough``. What
``target.env`` and a case's ``env`` set are the target's own and always reach it. The
trace backend's settings come last: against the local store no key at all (never the
store's token, never the user's Opik key): each turn gets a key of its own on top
(:func:`turn_env`), which writes only what that turn created; against Opik the user's
``OPIK_API_KEY``, which the agent needs to write its traces, unless
``trace_backend.agent_key: false`` says it ships them another way. The OpenTelemetry
exporter's variables (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``) point at the same backend and project; their
``Authorization`` header is the key the agent gets under ``OPIK_API_KEY``, and absent when
it gets none.
"""
from __future__ import annotations

import fnmatch
import threading
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from ..base.opik_env import OTLP_HEADERS_ENV, with_otlp_key, without_otlp_key
from ..base.redact import secret_names
from ..base.seal_key import KEY_ENV as SEAL_KEY_ENV
from ..config.judges_file import default_path, key_names
from ..config.target import TargetConfig

BACKEND_KEY = "OPIK_API_KEY"

_HELD: set[str] = set()
_HELD_LOCK = threading.Lock()


def hold_back(names: Iterable[str | None]) -> None:
    """Withhold these variables (the keys of the panel this run asks) from every agent this process starts."""
    with _HELD_LOCK:
        _HELD.update(n for n in names if n)


def judge_keys() -> frozenset[str]:
    """The names of every judge key the harness holds: those of the panel file in use and of this run's panel."""
    path = default_path()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    with _HELD_LOCK:
        held = frozenset(_HELD)
    return _file_keys(str(path), stamp) | held


@lru_cache(maxsize=8)
def _file_keys(path: str, stamp: int | None) -> frozenset[str]:
    return key_names(Path(path)) if stamp is not None else frozenset()


def declared(name: str, passthrough: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in passthrough)


def agent_environ(config: TargetConfig, environ: Mapping[str, str], sdk_env: Mapping[str, str]) -> dict[str, str]:
    """The environment an agent process of ``config`` starts from (its sandbox then adds its own keys)."""
    passthrough = config.target.env_passthrough
    withheld = judge_keys() | set(secret_names(environ, config.redact_patterns))
    out = {k: v for k, v in environ.items() if k not in withheld or declared(k, passthrough)}
    out.pop(SEAL_KEY_ENV, None)  # the key that signs the run's seal: never the agent's, whatever is declared
    out.update(config.target.env)
    out.update(sdk_env)
    backend = config.backend
    if backend.kind == "local":
        # The store's token is the harness's alone: a turn writes with the key turn_env gives it.
        out.pop(BACKEND_KEY, None)
        out = without_otlp_key(out)
    if backend.kind == "opik":
        if backend.agent_key and BACKEND_KEY in environ:
            out[BACKEND_KEY] = environ[BACKEND_KEY]
        elif not backend.agent_key and not declared(BACKEND_KEY, passthrough):
            out.pop(BACKEND_KEY, None)
        if out.get(BACKEND_KEY):
            # An agent exporting OpenTelemetry sends the same key the SDK would, and only then.
            out = with_otlp_key(out, out[BACKEND_KEY])
    return out


def turn_env(base: Mapping[str, str], key: str | None) -> dict[str, str]:
    """What a turn adds to its environment: its own key, as ``OPIK_API_KEY`` and in the OTLP headers (local store)."""
    if not key:
        return {}
    return {BACKEND_KEY: key, **{k: v for k, v in with_otlp_key(without_otlp_key(base), key).items()
                                 if k == OTLP_HEADERS_ENV and k in base}}
