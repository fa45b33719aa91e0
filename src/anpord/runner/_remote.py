"""Running trials for a run driven by another process: a process pool's worker, a Ray actor.

A worker keeps one ``LocalExecutor`` (so each harness is set up once per worker, not per trial)
and one event loop, and turns each ``TrialSpec`` it is sent into plain data — the trial's record
and events as dicts — that pickles and travels back to the driver, which writes the run folder.
Around its trials it sets up what ``execute`` sets up around a local run (prints go to the trial's
log, an unawaited drive call fails its trial, a trial that blocks the loop is blamed for it), so a
trial gets the same verdict wherever it runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import socket
from collections.abc import Callable
from typing import Any

from ..events import Event
from ..results._model import TrialResult
from ._local import LocalExecutor
from ._spec import TrialSpec, driver_paths

__all__ = ["TrialWorker", "run_spec", "trial_from_wire"]


class TrialWorker:
    """One worker's trial runner: ``await worker.run(spec)`` from an async host (a Ray actor),
    or ``run_spec(spec)`` from a sync one (a process pool)."""

    def __init__(self, max_concurrency: int = 8, max_sandboxes: int | None = None, *,
                 host: str | None = None, on_log: Callable[[TrialSpec, str], None] | None = None):
        self.executor = LocalExecutor(
            max_concurrency=max_concurrency, max_sandboxes=max_sandboxes, host=host or socket.gethostname()
        )
        self.on_log = on_log or (lambda _spec, _message: None)
        self._around: contextlib.ExitStack | None = None

    def _enter(self) -> None:
        """On the first trial, in the loop the trials run on: what ``execute`` does for a run."""
        from ._capture import captured_output
        from .._contain import task_factory
        from ._stalls import StallMonitor
        from ._unawaited import unawaited_calls_fail

        loop = asyncio.get_running_loop()
        if loop.get_task_factory() is not task_factory:
            loop.set_task_factory(task_factory)  # type: ignore[arg-type]
        if self._around is None:
            around = self._around = contextlib.ExitStack()
            around.enter_context(captured_output())
            around.enter_context(unawaited_calls_fail())
            monitor = self.executor.monitor = StallMonitor(loop)
            monitor.start()
            around.callback(monitor.stop)

    async def run(self, spec: TrialSpec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        self._enter()
        result, events = await self.executor.run_one(spec, self.on_log)
        return driver_paths(result.to_dict()), driver_paths([e.to_dict() for e in events])

    async def close(self) -> None:
        try:
            await self.executor.close()
        finally:
            if self._around is not None:
                self._around.close()
                self._around = None


_worker: TrialWorker | None = None
_loop: asyncio.AbstractEventLoop | None = None


def _close() -> None:
    if _worker is not None and _loop is not None and not _loop.is_closed():
        _loop.run_until_complete(_worker.close())
        _loop.close()


def run_spec(spec: TrialSpec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one trial in this process (a pool worker), on a loop kept for the process's life."""
    global _worker, _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        _worker = TrialWorker()
        atexit.register(_close)
    assert _worker is not None
    return _loop.run_until_complete(_worker.run(spec))


def trial_from_wire(record: dict[str, Any], events: list[dict[str, Any]]) -> tuple[TrialResult, list[Event]]:
    return TrialResult.from_dict(record), [Event.from_dict(e) for e in events]
