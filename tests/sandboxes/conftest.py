"""Fixtures for the sandbox tests (helpers in sandbox_support.py)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import Listener

from anpord.sandboxes._watchdog import discard_folder


@pytest.fixture
def tmp_root(tmp_path: Path) -> Iterator[Path]:
    """Where the sandbox under test makes its instance folders; must be empty afterwards."""
    root = tmp_path / "roots"
    root.mkdir()
    yield root
    assert list(root.iterdir()) == [], "a sandbox left files behind"


@pytest.fixture
def shm_root() -> Iterator[Path]:
    """Like ``tmp_root``, in memory (/dev/shm, where runs put instance folders by default): as
    root, each instance folder is then a size-capped tmpfs of its own."""
    root = Path(tempfile.mkdtemp(prefix="anpord-test-roots-", dir="/dev/shm"))
    try:
        yield root
        assert list(root.iterdir()) == [], "a sandbox left files behind"
    finally:
        for left in root.iterdir():  # a failed test's: unmounted first
            discard_folder(str(left))
        root.rmdir()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()
