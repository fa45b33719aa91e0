"""The one rule that turns a name into a case-id key (used by discovery and the importers)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["slug"]

_NOT_SLUG = re.compile(r"[^\w.]+")
_HYPHENS = re.compile(r"-{2,}")


def slug(text: Any) -> str:
    """Stable, path-safe key: Unicode letters and digits kept, runs of anything else → '-'."""
    return _HYPHENS.sub("-", _NOT_SLUG.sub("-", str(text).strip().lower())).strip("-.")
