"""Fixtures for the core tests (see core_support.py for the project and run helpers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from core_support import Project, build_project


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Project]:
    """``make_project(files, config=DEFAULT_CONFIG, agents=True)`` → a fresh project folder with
    the example agents in ``agents/kit.py``; ``project.run("--json", ...)`` runs ``anpord eval``."""
    return build_project_in(tmp_path)


@pytest.fixture(scope="module")
def make_module_project(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Project]:
    """The same, for a project (and a run) shared by the tests of one module."""
    return build_project_in(tmp_path_factory.mktemp("core"))


def build_project_in(base: Path) -> Callable[..., Project]:
    count = 0

    def make(*args, **kwargs) -> Project:  # type: ignore[no-untyped-def]
        nonlocal count
        count += 1
        return build_project(base / f"project{count}", *args, **kwargs)

    return make
