"""Suite-wide fixtures."""

from __future__ import annotations

import gc
from collections.abc import Iterator

from collections.abc import Callable
from pathlib import Path

import pytest
from project_support import Project, build_project

# The folders whose tests run sandboxed programs inside the test process (asyncio transports).
_IN_PROCESS_SUBPROCESSES = {"sandboxes", "command", "verifiers", "workspace"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of an ``xdist_group`` first (the Ray module is the longest stretch of the suite,
    run by one worker): under ``-n`` that worker starts on it at once while the others share
    everything else, rather than starting it last. The order within a module is kept."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


@pytest.fixture(autouse=True)
def collect_garbage(request: pytest.FixtureRequest) -> Iterator[None]:
    """Finalize what a test left behind while that test is still the current one.

    A finalizer that raises (an asyncio transport whose loop is gone) is then reported against
    the test that leaked it rather than at a random later moment, such as inside pytest's own
    source parsing while it shows another test's failure, which Python 3.11's parser does not
    survive. Only where such objects are made: a full collection costs about 40 ms.
    """
    yield
    if request.node.path.parent.name in _IN_PROCESS_SUBPROCESSES:
        gc.collect()


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Project]:
    """``make_project(files, config=DEFAULT_CONFIG, agents=True)`` → a fresh project folder with
    the example agents in ``agents/kit.py``; ``project.run("--json", ...)`` runs ``anpord eval``."""
    return build_project_in(tmp_path)


@pytest.fixture(scope="module")
def make_module_project(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Project]:
    """The same, for a project (and a run) shared by the tests of one module."""
    return build_project_in(tmp_path_factory.mktemp("project"))


def build_project_in(base: Path) -> Callable[..., Project]:
    count = 0

    def make(*args, **kwargs) -> Project:  # type: ignore[no-untyped-def]
        nonlocal count
        count += 1
        return build_project(base / f"project{count}", *args, **kwargs)

    return make
