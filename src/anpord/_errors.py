"""Errors shared across packages."""

from __future__ import annotations

__all__ = ["DefinitionError", "UsageError", "exception_line"]


class UsageError(Exception):
    """A usage, config or discovery error: one line, exit 2."""


class DefinitionError(ValueError):
    """An eval or suite is defined wrongly (reported at load time, exit 2). On the lowest floor:
    every part that checks what a user declares (cases, judges, users, mocks) raises it."""


def exception_line(exc: BaseException) -> str:
    """An exception as a one-line reason: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
