"""Fixtures for the HTTP harness tests: the example agents served by ``anpord serve``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from project_support import Project
from serve_support import Server, serve


@pytest.fixture(scope="module")
def served_project(make_module_project: Callable[..., Project]) -> Iterator[tuple[Project, Server]]:
    """A project with the example agents, and ``anpord serve agents.kit:agent`` run in it."""
    project = make_module_project()
    server = serve("agents.kit:agent", project.folder)
    yield project, server
    code = server.stop()
    assert code == 0, server.output
