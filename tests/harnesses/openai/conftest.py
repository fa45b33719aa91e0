"""Fixtures for the model-harness tests: a scripted model server on 127.0.0.1 per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from anpord.testing.model_server import ModelServer


@pytest.fixture
def model_server() -> Iterator[Callable[..., ModelServer]]:
    """``model_server(rules, latency=0.0)`` → a started server, stopped after the test."""
    started: list[ModelServer] = []

    def start(rules: Any = (), **kwargs: Any) -> ModelServer:
        server = ModelServer(rules, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
