"""Errors shared across packages."""

from __future__ import annotations

__all__ = ["UsageError", "exception_line"]


class UsageError(Exception):
    """A usage, config or discovery error: one line, exit 2."""


def exception_line(exc: BaseException) -> str:
    """An exception as a one-line reason: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
