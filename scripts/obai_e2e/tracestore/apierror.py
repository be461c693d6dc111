"""The error a request handler raises to answer with an Opik-style JSON error body."""
from __future__ import annotations


class ApiError(Exception):
    """A request the store refuses: HTTP status plus a message naming what is wrong.

    Opik answers a refused request body with ``{"errors": [...]}`` and a missing resource
    with ``{"code": ..., "message": ...}`` (its web framework's error form); ``plain`` picks
    the second.
    """

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, *,
                 plain: bool = False, project: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.plain = plain
        self.project = project
        """The project the refused request touched, when the refusal knows it (for the refusal record)."""

    def body(self) -> dict:
        if self.plain:
            return {"code": self.status, "message": self.message}
        return {"errors": [self.message]}


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def project_not_found(*, name: str | None = None, project_id: str | None = None) -> ApiError:
    """Opik's answer to a search or lookup in a project that does not exist (ProjectService)."""
    if name is not None:
        return ApiError(404, f"Project name: {name} not found", plain=True)
    return ApiError(404, f"Project id: {project_id} not found", plain=True)


def forbidden(message: str, *, project: str | None) -> ApiError:
    """A write a turn's key may not make (Opik's 403 shape), kept in the refusal record under ``project``."""
    return ApiError(403, message, plain=True, project=project)
