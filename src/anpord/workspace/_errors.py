"""The one error every part of workspace filling raises."""

from __future__ import annotations

__all__ = ["SourceError"]


class SourceError(Exception):
    """A source cannot be materialised (bad path, missing folder, failed clone)."""
