"""Fixtures for the command-harness tests (helpers in command_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Path]:
    """A folder for agent scripts, outside every workspace (mount it for bwrap)."""
    folder = tmp_path / "agents"
    folder.mkdir()
    yield folder


@pytest.fixture(autouse=True)
def nothing_left(tmp_path: Path) -> Iterator[None]:
    yield
    roots = tmp_path / "roots"
    if roots.exists():
        assert list(roots.iterdir()) == [], "a trial left files behind"
