"""Environment for processes that talk to a trace backend through the ``opik`` SDK.

Against the local store the SDK is pointed at it with ``OPIK_URL_OVERRIDE`` and carries
a key as ``OPIK_API_KEY`` (the SDK sends it as the ``Authorization`` header, whatever the
URL): the harness its store's token, each turn of an agent a turn key of its own; against a
real Opik the user's own configuration (environment, ``~/.opik.config``) is left alone.
In both cases the SDK's phone-home features are switched off, and the flush at exit is
bounded so that a dead backend cannot hold a process for long.

An agent traced through OpenTelemetry instead of the SDK exports to the backend's OTLP path
(``/v1/private/otel/v1/traces`` under the API URL): :func:`otlp_env` gives the standard
exporter variables for it, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and
``OTEL_EXPORTER_OTLP_HEADERS`` (``projectName``, ``Comet-Workspace`` and, where the agent
gets the backend's key, ``Authorization``; values percent-encoded as the variable's format asks).
"""
from __future__ import annotations

import contextlib
import gc
import os
from types import ModuleType
from typing import Iterator, Mapping
from urllib.parse import quote

QUIET_SDK_ENV = {
    "OPIK_ANALYTICS_ENABLE": "false",
    "OPIK_SENTRY_ENABLE": "false",
}

DEFAULT_FLUSH_TIMEOUT_S = 2

OTLP_TRACES_PATH = "/v1/private/otel/v1/traces"
OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTLP_HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"
OTLP_KEY_HEADER = "Authorization"


def otlp_env(api_url: str, project: str | None, *, workspace: str | None = None,
             key: str | None = None) -> dict[str, str]:
    """The OTLP exporter's variables for the backend at ``api_url`` (ends in /api)."""
    headers = {"projectName": project, "Comet-Workspace": workspace, OTLP_KEY_HEADER: key}
    return {
        OTLP_ENDPOINT_ENV: api_url.rstrip("/") + OTLP_TRACES_PATH,
        OTLP_HEADERS_ENV: ",".join(f"{name}={quote(value, safe='')}" for name, value in headers.items() if value),
    }


def with_otlp_key(env: Mapping[str, str], key: str) -> dict[str, str]:
    """``env`` whose OTLP headers also carry ``key`` as Authorization (when it has OTLP headers)."""
    out = dict(env)
    if OTLP_ENDPOINT_ENV in out:
        headers = [h for h in out.get(OTLP_HEADERS_ENV, "").split(",") if h]
        out[OTLP_HEADERS_ENV] = ",".join([*headers, f"{OTLP_KEY_HEADER}={quote(key, safe='')}"])
    return out


def without_otlp_key(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` whose OTLP headers carry no Authorization (the other headers kept as they are)."""
    out = dict(env)
    if OTLP_HEADERS_ENV in out:
        headers = [h for h in out[OTLP_HEADERS_ENV].split(",")
                   if h and h.split("=", 1)[0].strip().lower() != OTLP_KEY_HEADER.lower()]
        out[OTLP_HEADERS_ENV] = ",".join(headers)
    return out


def local_store_env(
    api_url: str, flush_timeout_s: int = DEFAULT_FLUSH_TIMEOUT_S, *, token: str | None = None
) -> dict[str, str]:
    """Variables that point an SDK process at the local store at ``api_url`` (ends in /api).

    ``token`` is the store's access token (``token`` in its store.json); without it the
    store answers 401 to everything but its health ping.
    """
    env = {
        **QUIET_SDK_ENV,
        # The store is on loopback; a proxy configured for the internet must not be used for it.
        "NO_PROXY": _no_proxy(),
        "OPIK_URL_OVERRIDE": api_url,
        "OPIK_WORKSPACE": "default",
        "OPIK_DEFAULT_FLUSH_TIMEOUT": str(flush_timeout_s),
        # Over loopback, gzip only spends CPU on both ends (the store accepts either).
        "OPIK_ENABLE_JSON_REQUEST_COMPRESSION": "false",
        # The store keeps payloads inline and has no attachment storage: with extraction on, the SDK
        # would swap a base64 value of 256,000 characters or more for a reference to an upload.
        "OPIK_IS_ATTACHMENT_EXTRACTION_ACTIVE": "false",
    }
    if token:
        env["OPIK_API_KEY"] = token
    return env


def _no_proxy() -> str:
    current = [h.strip() for h in os.environ.get("NO_PROXY", os.environ.get("no_proxy", "")).split(",") if h.strip()]
    for host in ("127.0.0.1", "localhost"):
        if host not in current:
            current.append(host)
    return ",".join(current)


def remote_env(flush_timeout_s: int = DEFAULT_FLUSH_TIMEOUT_S) -> dict[str, str]:
    """Variables added for a real Opik: the user's URL, key and workspace are kept."""
    env = dict(QUIET_SDK_ENV)
    env.setdefault("OPIK_DEFAULT_FLUSH_TIMEOUT", str(flush_timeout_s))
    return env


def merged(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(base)
    env.update(extra)
    return env


def apply_to_current_process(extra: Mapping[str, str]) -> None:
    """Set SDK variables in this process before ``opik`` is first imported."""
    for key, value in extra.items():
        os.environ[key] = value


def import_sdk() -> ModuleType:
    """``import opik``, with the garbage collector paused and model building deferred while it runs.

    The import defines ~590 pydantic models (the REST client's types) and frees almost
    nothing. Collecting during it costs about a tenth of its CPU for no memory; what it built
    lives as long as the process and is frozen out of later full collections, which would
    only walk it again. A process uses a handful of those models, so each one's validator is
    built when it is first used (pydantic's ``defer_build``) rather than all of them at import:
    about a fifth of the import's CPU.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        with models_built_on_first_use():
            import opik
    finally:
        if collecting:
            gc.enable()
    gc.freeze()
    return opik


@contextlib.contextmanager
def models_built_on_first_use() -> Iterator[None]:
    """Within the block, pydantic models defined without a ``defer_build`` of their own build
    their schema and validator when first used. Where this pydantic keeps its config defaults
    elsewhere, the block changes nothing and the models build at once, as usual."""
    try:
        from pydantic._internal import _config
        defaults = _config.config_defaults
        before = defaults["defer_build"]
    except (ImportError, AttributeError, KeyError, TypeError):
        yield
        return
    defaults["defer_build"] = True
    try:
        yield
    finally:
        defaults["defer_build"] = before
