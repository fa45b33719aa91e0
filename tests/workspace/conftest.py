"""Fixtures for the source tests: an isolated clone cache per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from anpord.workspace import _git


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ANPORD_CACHE_DIR", str(cache))
    monkeypatch.setattr(_git, "_memo", {})
    yield cache
    leftovers = (
        [p.name for p in (cache / "repos").glob("*.tmp-*")] if (cache / "repos").exists() else []
    )
    assert leftovers == [], "a failed clone left a temp folder in the cache"
