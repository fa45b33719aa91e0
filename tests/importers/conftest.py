"""Fixtures for the importer tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from importers_support import OWN


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project's own fixtures as the working folder, so paths read as typed."""
    target = tmp_path / "cases"
    shutil.copytree(OWN, target)
    monkeypatch.chdir(target)
    return target
