"""Fixtures for the view's tests: one headless Chromium per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from view_support import open_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with open_browser() as b:
        yield b
