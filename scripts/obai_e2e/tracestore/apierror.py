"""The error a request handler raises to answer with an Opik-style JSON error body."""
from __future__ import annotations


class ApiError(Exception):
    """A request the store refuses: HTTP status plus a message naming what is wrong."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}

    def body(self) -> dict:
        return {"errors": [self.message]}


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)
