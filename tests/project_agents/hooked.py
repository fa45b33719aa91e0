"""Agents with run-level ``setup``/``teardown`` hooks, for the tests that check when a runner or
``anpord serve`` calls them. Each hook appends its name to the file named by ``HOOKS_LOG``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _note(what: str) -> None:
    with Path(os.environ["HOOKS_LOG"]).open("a") as f:
        f.write(what + "\n")


class HookedAgent:
    """Answers whether its setup hook ran before the turn."""

    def __init__(self) -> None:
        self.ready = False

    async def setup(self) -> None:
        _note("setup")
        self.ready = True

    def teardown(self) -> None:  # a sync hook works too
        _note("teardown")

    async def __call__(self, turn: Any) -> str:
        return f"ready={self.ready}"


hooked = HookedAgent()


class BrokenSetupAgent:
    async def setup(self) -> None:
        raise RuntimeError("no database")

    async def __call__(self, turn: Any) -> str:
        return "never"


broken_setup = BrokenSetupAgent()
