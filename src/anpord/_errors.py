"""Errors shared across packages."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """A usage, config or discovery error: one line, exit 2."""
