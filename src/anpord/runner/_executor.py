"""The executor seam: where trials run.

The driver (``execute``) hands an ``Executor`` the run's ``TrialSpec``\\ s and a ``TrialSink``; the
executor runs them — in this process's event loop (``LocalExecutor``), in a process pool, on a
Ray cluster — and reports each trial's start, log lines and finished record back through the sink.
Discovery, planning, verdicts, artifacts and reporters never know where a trial ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..events import Event
    from ..results._model import TrialResult
    from ._spec import TrialSpec

__all__ = ["Executor", "TrialSink"]


@runtime_checkable
class TrialSink(Protocol):
    """Where an executor reports. Called on the driver's event loop, in any order across trials;
    ``trial_finished`` exactly once per spec taken (a trial that could not run at all is reported
    ``void`` with the reason, never dropped)."""

    def trial_started(self, spec: TrialSpec) -> None: ...

    def trial_log(self, spec: TrialSpec, message: str) -> None: ...

    def trial_finished(self, spec: TrialSpec, result: TrialResult, events: Sequence[Event]) -> None: ...


@runtime_checkable
class Executor(Protocol):
    name: str

    async def run(self, specs: Iterator[TrialSpec], sink: TrialSink, stop: asyncio.Event) -> None:
        """Run trials taken from ``specs`` — only as capacity frees, so a huge grid is never
        materialised — until it is exhausted, then return once every trial taken has finished.
        Once ``stop`` is set, take no more. If cancelled, cancel the running trials (their
        sandboxes close) before the cancellation propagates."""
        ...
