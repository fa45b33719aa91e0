"""A runner killed with SIGKILL — no ``finally``, no ``atexit`` — leaves no process and no folder
behind: its watchdog, which outlives it, kills every process carrying its marker and removes its
instance folders within moments. Tried several times per sandbox, at different moments of a run
(trials opening and closing all along), with folders in memory and on disk."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sandbox_support import KINDS, Runner, live_with

ATTEMPTS = 5
WITHIN = 60.0  # seconds after the kill: a bound on a hang; left behind, they would sleep for hours


@pytest.mark.parametrize("attempt", range(ATTEMPTS))
@pytest.mark.parametrize("kind", KINDS)
def test_nothing_of_a_killed_runner_remains(
    kind: str, attempt: int, shm_root: Path, tmp_root: Path
) -> None:
    roots = shm_root if attempt % 2 == 0 else tmp_root
    token = f"{7000 + os.getpid() % 1000}.{len(kind)}{attempt}"
    runner = Runner(kind, token, roots)
    try:
        assert runner.watchdog is not None
        time.sleep(0.05 + 0.1 * attempt)  # a different moment of the churn each time
        assert len(live_with(token)) >= 12  # 3 trials' background jobs, escaped ones included
        assert list(roots.iterdir())
        killed = time.monotonic()
        runner.kill()
        assert runner.gone(WITHIN), f"still running: {live_with(token)}"
        took = time.monotonic() - killed
        assert live_with(token) == []
        assert list(roots.iterdir()) == [], f"left behind {took:.2f}s after the kill"
        assert not os.path.exists(f"/proc/{runner.watchdog}")  # it did its work and ended
    finally:
        runner.close()
