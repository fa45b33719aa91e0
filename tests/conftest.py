"""Suite-wide fixtures."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

# The folders whose tests run sandboxed programs inside the test process (asyncio transports).
_IN_PROCESS_SUBPROCESSES = {"sandboxes", "harness_command", "verifiers", "sources"}


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
