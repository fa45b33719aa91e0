"""What can go wrong talking to a model endpoint, as types a caller can branch on.

Every error is a ``ModelError`` whose message is one line fit for a trial's reason. None of them is
the agent's fault: a harness turns them into a ``void`` trial (could not be measured)."""

from __future__ import annotations

__all__ = [
    "MalformedResponseError",
    "ModelConnectionError",
    "ModelError",
    "ModelTimeoutError",
    "ProviderError",
    "RateLimitedError",
]


class ModelError(Exception):
    """The model endpoint could not give an answer."""

    def __init__(self, message: str, *, attempts: int = 1):
        super().__init__(message)
        self.attempts = attempts


class ProviderError(ModelError):
    """The endpoint answered with an HTTP error (4xx, or 5xx after the retries)."""

    def __init__(self, message: str, *, status: int, body: str = "", attempts: int = 1):
        super().__init__(message, attempts=attempts)
        self.status = status
        self.body = body


class RateLimitedError(ProviderError):
    """Still rate limited (HTTP 429) after the retries, or asked to wait longer than allowed."""

    def __init__(
        self, message: str, *, body: str = "", attempts: int = 1, retry_after: float | None = None
    ):
        super().__init__(message, status=429, body=body, attempts=attempts)
        self.retry_after = retry_after


class ModelTimeoutError(ModelError):
    """No complete answer within the per-request timeout, on every attempt."""


class MalformedResponseError(ModelError):
    """The endpoint answered 200 with a body that is not a chat completion."""


class ModelConnectionError(ModelError):
    """The endpoint could not be reached, or dropped the connection, on every attempt."""
