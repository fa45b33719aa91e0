"""Fixtures for the sandbox tests (helpers in sandbox_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import Listener


@pytest.fixture
def tmp_root(tmp_path: Path) -> Iterator[Path]:
    """Where the sandbox under test makes its instance folders; must be empty afterwards."""
    root = tmp_path / "roots"
    root.mkdir()
    yield root
    assert list(root.iterdir()) == [], "a sandbox left files behind"


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()
