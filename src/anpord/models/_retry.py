"""When to try a request again, and how long to wait first."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

__all__ = ["RETRY_STATUSES", "RetryPolicy", "retry_after_seconds"]

# Statuses worth another attempt: timeouts, conflicts, rate limits and server faults.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` in all (1 = no retry). Backoff doubles from ``base_delay`` up to ``max_delay``
    with full jitter, so many trials rate limited together do not retry in lockstep. A server's
    ``Retry-After`` replaces the backoff; one asking for more than ``max_retry_after`` seconds ends
    the retries at once (the trial could not wait that long anyway)."""

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_attempts, bool)
            or not isinstance(self.max_attempts, int)
            or self.max_attempts < 1
        ):
            raise ValueError(f"max_attempts must be a positive integer, got {self.max_attempts!r}")

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1-based), without a Retry-After."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The server's requested wait: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP
    date. None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
