"""The ``shout`` harness: an agent that answers every message in capitals.

``harness="shout:"`` answers ``HELLO`` to ``hello``; ``harness="shout:BOT"`` answers
``BOT: HELLO``. A harness plugin is a resolver: ``resolve(spec, project_dir)`` gets the whole
spec and returns a ``Harness``; here the built-in Python harness runs a function of ours.
"""

from __future__ import annotations

from pathlib import Path

from anpord import TurnContext
from anpord.harnesses import HarnessSpecError
from anpord.harnesses.python import PythonHarness


def resolve(spec: str, project_dir: Path | None = None) -> PythonHarness:
    prefix = spec.partition(":")[2]
    if any(c.islower() for c in prefix):
        # Checked before the run: the CLI prints this line and exits 2.
        raise HarnessSpecError(f"{spec}: the prefix must be in capitals, got {prefix!r}")

    async def shout(turn: TurnContext) -> str:
        text = str(turn.input or "").upper()
        return f"{prefix}: {text}" if prefix else text

    return PythonHarness(spec, shout)
