"""Preflight's one authenticated call to Opik names what is wrong: the key, the workspace or the project.

The live cases point ``kind: opik`` at the running local store, which answers the project lookup
as Opik does (200, 401 for a refused key, 404 "Project name: X not found"); a 403 for a workspace
the key cannot use, which only Opik's auth service gives, is checked on its answer alone.
"""
from __future__ import annotations

import pytest
from obai_e2e.base.errors import BackendUnreachable, TraceBackendError
from obai_e2e.trace.backend import Backend, access_note, ping

from tracestore.helpers import Api, project_name, trace_payload

URL = "https://opik.example/api/v1/private/projects/retrieve"


def _opik(monkeypatch, store, *, key: str | None, project: str) -> Backend:
    monkeypatch.setenv("OPIK_URL_OVERRIDE", store.api_url)
    monkeypatch.setenv("OPIK_WORKSPACE", "default")
    if key is None:
        monkeypatch.delenv("OPIK_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPIK_API_KEY", key)
    monkeypatch.setenv("HOME", "/nonexistent")  # no ~/.opik.config of the machine's user
    return Backend(kind="opik", project=project, api_url=store.api_url, sdk_env={})


def test_a_reachable_opik_with_the_project_passes(trace_store, monkeypatch):
    project = project_name("known")
    api = Api(trace_store.api_url, trace_store.token)
    try:
        api.batch("traces", [trace_payload(project)])
    finally:
        api.close()
    assert ping(_opik(monkeypatch, trace_store, key=trace_store.token, project=project)) is None


def test_a_missing_project_is_named_but_does_not_stop_the_run(trace_store, monkeypatch):
    project = project_name("unborn")
    note = ping(_opik(monkeypatch, trace_store, key=trace_store.token, project=project))
    assert f"project {project!r} does not exist in workspace 'default' yet" in note
    assert "trace_backend.project" in note


@pytest.mark.parametrize("key, named", [("not-the-key", "refused the API key"), (None, "no API key is set")])
def test_a_refused_key_is_named(trace_store, monkeypatch, key, named):
    with pytest.raises(TraceBackendError, match=named) as caught:
        ping(_opik(monkeypatch, trace_store, key=key, project="anything"))
    assert "OPIK_API_KEY" in str(caught.value) and "HTTP 401" in str(caught.value)


def test_a_workspace_the_key_cannot_use_is_named():
    with pytest.raises(TraceBackendError, match="no access to workspace 'team-b'") as caught:
        access_note(403, '{"code":403,"message":"User has no permission to the workspace"}', url=URL,
                    workspace="team-b", project="obai", has_key=True)
    assert "OPIK_WORKSPACE" in str(caught.value)


def test_a_404_that_is_not_about_the_project_is_a_wrong_address():
    with pytest.raises(BackendUnreachable, match="HTTP 404"):
        access_note(404, "<html>Not Found</html>", url=URL, workspace="w", project="obai", has_key=True)


def test_an_opik_that_does_not_answer_is_unreachable(monkeypatch):
    monkeypatch.setenv("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")
    monkeypatch.setenv("HOME", "/nonexistent")
    with pytest.raises(BackendUnreachable, match="does not answer"):
        ping(Backend(kind="opik", project="p", api_url="http://127.0.0.1:9/api", sdk_env={}), timeout_s=1)
