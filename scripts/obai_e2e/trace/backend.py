"""The trace backend: the local store or a real Opik, reached through the ``opik`` SDK.

``opik`` is imported only when a trace is actually read: importing it costs seconds.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..base import opik_env, tls
from ..base.errors import BackendUnreachable, StoreError, TraceBackendError
from ..config.target import TargetConfig

if TYPE_CHECKING:
    from ..tracestore.turnkeys import TurnKey


@dataclass(frozen=True)
class Backend:
    """Where traces live, and the variables an SDK process needs to reach them."""

    kind: str
    project: str
    api_url: str | None
    sdk_env: dict[str, str]
    trace_url_template: str | None = None  # {trace_id} and {project} are filled in, URL-quoted
    strict: bool = False  # a local store answering with Opik's eventual visibility (--strict-opik)

    def trace_url(self, trace_id: str) -> str | None:
        """The trace's page in the backend's UI, or None when no page is known."""
        if not self.trace_url_template:
            return None
        return (self.trace_url_template.replace("{trace_id}", quote(trace_id, safe=""))
                .replace("{project}", quote(self.project, safe="")))

    def turn_key(self, unit: str, turn: str) -> "TurnKey | None":
        """The key one turn (``turn``, e.g. its correlation tag) of one unit (``unit``, its session) writes with
        on the local store, and the ``created_by`` its writes carry; None against Opik, which mints no keys."""
        token = self.sdk_env.get("OPIK_API_KEY") if self.kind == "local" else None
        if not token:
            return None
        from ..tracestore.turnkeys import mint

        return mint(token, unit, turn)

    def describe(self) -> str:
        return f"local trace store at {self.api_url}" if self.kind == "local" else f"Opik at {self.api_url or 'the SDK default'}"


def connect(config: TargetConfig, *, start_local: bool = True) -> Backend:
    """Resolve the configured backend; the local store is started when needed."""
    b = config.backend
    return connect_to(b.kind, b.project, flush_timeout_s=b.flush_timeout_s, start_local=start_local,
                      trace_url_template=config.report.trace_url_template)


def connect_to(kind: str, project: str, *, flush_timeout_s: int = opik_env.DEFAULT_FLUSH_TIMEOUT_S,
               start_local: bool = True, trace_url_template: str | None = None) -> Backend:
    """A backend of ``kind`` (local or opik) for ``project``, without a target configuration."""
    if kind == "local":
        from ..tracestore import daemon

        if start_local:
            info = daemon.ensure_running()
        else:
            state = daemon.status()
            if not state.get("running"):
                raise BackendUnreachable("the local trace store is not running (start it: obai-e2e traces start)")
            info = state
        api_url = info.api_url if hasattr(info, "api_url") else info["api_url"]
        token = info.token if hasattr(info, "token") else info.get("token")
        strict = info.strict_opik if hasattr(info, "strict_opik") else bool(info.get("strict_opik"))
        env = opik_env.local_store_env(api_url, flush_timeout_s, token=token)
        env["OPIK_PROJECT_NAME"] = project
        # No key in the exporter's headers: a turn adds its own (Backend.turn_key), the harness exports nothing.
        env.update(opik_env.otlp_env(api_url, project, workspace="default"))
        page = trace_url_template or (api_url.rstrip("/").removesuffix("/api") + "/traces/{trace_id}")
        return Backend(kind="local", project=project, api_url=api_url, sdk_env=env, trace_url_template=page,
                       strict=strict)
    env = opik_env.remote_env(flush_timeout_s)
    env["OPIK_PROJECT_NAME"] = project
    url, workspace = _sdk_settings()
    if url:
        # Without the key: the agent's environment adds it where the agent gets the key (agent_env).
        env.update(opik_env.otlp_env(url, project, workspace=workspace))
    return Backend(kind="opik", project=project, api_url=url, sdk_env=env,
                   trace_url_template=trace_url_template)


# How long a first match waits for a second trace of the same turn when target.yaml sets no
# trace_backend.settle_s. Opik ingests writes asynchronously: a trace flushed at the same moment
# as the first can become searchable a moment later. The local store makes a write searchable
# when it is answered, unless it runs with Opik's eventual visibility (--strict-opik).
OPIK_SETTLE_S = 1.0


def settle_s(configured: float | None, backend: Backend) -> float:
    """The settle time of a resolution: the configured one, else the default of the backend's kind."""
    if configured is not None:
        return configured
    return OPIK_SETTLE_S if backend.kind == "opik" or backend.strict else 0.0


def _sdk_settings() -> tuple[str | None, str | None]:
    """The base URL and workspace the SDK would use, from its own configuration sources."""
    try:
        config = opik_env.import_sdk().config.OpikConfig()
        return config.url_override, config.workspace
    except Exception:  # a broken user config shows up in ping() with a clear message
        return None, None


def ping(backend: Backend, timeout_s: float = 3.0) -> str | None:
    """Raise unless the backend answers; for Opik, also unless its key and workspace are accepted.

    Against Opik this is one authenticated call, a lookup of the configured project, which
    tells a refused key (401), a workspace the key cannot use (403) and a missing project
    (404) apart. A missing project is not an error (the agent's first trace creates it):
    the returned note says so; otherwise None.
    """
    import httpx  # deferred: a third of a second of import time for every script

    if backend.kind == "local":
        url = backend.api_url.rstrip("/") + "/is-alive/ping"
        try:
            response = httpx.get(url, timeout=timeout_s, verify=tls.default_context())
        except httpx.HTTPError as exc:
            raise BackendUnreachable(f"{backend.describe()} does not answer ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise BackendUnreachable(f"{backend.describe()} answered HTTP {response.status_code} to a ping")
        return None
    _apply_sdk_env(backend)
    try:
        from opik import config as opik_config

        cfg = opik_config.OpikConfig()
        url = (cfg.url_override or "").rstrip("/") + "/v1/private/projects/retrieve"
        headers = {"Comet-Workspace": cfg.workspace or ""}
        if cfg.api_key:
            headers["Authorization"] = cfg.api_key
        response = httpx.post(url, json={"name": backend.project}, timeout=timeout_s, headers=headers,
                              verify=tls.default_context())
    except httpx.HTTPError as exc:
        raise BackendUnreachable(f"Opik does not answer ({type(exc).__name__}); check OPIK_URL_OVERRIDE / ~/.opik.config") from None
    return access_note(response.status_code, response.text, url=url, workspace=cfg.workspace, project=backend.project,
                       has_key=bool(cfg.api_key))


def access_note(status: int, body: str, *, url: str, workspace: str | None, project: str, has_key: bool) -> str | None:
    """What an authenticated project lookup at Opik says about the key, the workspace and the project."""
    said = body.strip().replace("\n", " ")[:200]
    if status == 200:
        return None
    if status == 401:
        key = "the API key (OPIK_API_KEY or api_key in ~/.opik.config)"
        raise TraceBackendError(f"Opik at {url} refused {key if has_key else 'the request: no API key is set; set ' + key}"
                                f" for workspace {workspace!r} (HTTP 401: {said})")
    if status == 403:
        raise TraceBackendError(f"Opik at {url} accepted no access to workspace {workspace!r} with this API key: set "
                                f"OPIK_WORKSPACE (or workspace in ~/.opik.config) to a workspace of the key's user "
                                f"(HTTP 403: {said})")
    if status == 404 and "roject" in said:  # Opik's "Project name: X not found", not a 404 of a wrong URL
        return (f"project {project!r} does not exist in workspace {workspace!r} yet: the agent's first trace creates "
                "it; if traces were written before, trace_backend.project names the wrong project")
    raise BackendUnreachable(f"Opik at {url} answered HTTP {status} to a project lookup: {said}")


def _apply_sdk_env(backend: Backend) -> None:
    # Only quietening variables and the local URL are set; a user's own Opik settings win.
    for key, value in backend.sdk_env.items():
        if backend.kind == "local" or key not in os.environ:
            os.environ[key] = value


_CLIENTS: dict[tuple, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def client(backend: Backend):
    """An ``opik.Opik`` client for reading, created once per backend per process."""
    key = (backend.kind, backend.api_url, backend.project)
    with _CLIENTS_LOCK:
        if key in _CLIENTS:
            return _CLIENTS[key]
        _apply_sdk_env(backend)
        opik = opik_env.import_sdk()  # deferred: seconds of import time
        if backend.kind == "local":
            c = opik.Opik(project_name=backend.project, host=backend.api_url, workspace="default",
                          _show_misconfiguration_message=False)
        else:
            c = opik.Opik(project_name=backend.project, _show_misconfiguration_message=False)
        _CLIENTS[key] = c
        return c


def warm_up(backend: Backend) -> threading.Thread:
    """Import the SDK and build the client on a thread while the target runs.

    The target's own turn takes seconds, so the import cost of ``opik`` is hidden
    behind it instead of being added to every case.
    """
    def work() -> None:
        try:
            client(backend)
        except Exception:  # noqa: BLE001 - the real call reports the problem
            pass

    thread = threading.Thread(target=work, name="opik-warm-up", daemon=True)
    thread.start()
    return thread


def is_unreachable_error(exc: BaseException) -> bool:
    """True for errors that mean the backend could not be reached or failed on its side."""
    import httpx

    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadTimeout,
                        httpx.RemoteProtocolError, httpx.PoolTimeout, ConnectionError, StoreError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status in (401, 403))
