"""An event loop that a run can always leave, even with agent code that will not stop.

``asyncio.run`` ends by cancelling every task left and waiting for all of them, without a bound:
one agent coroutine that swallows ``CancelledError`` in a loop keeps the process alive forever,
after its trial has long been decided. ``run_bounded`` gives what is left a grace period and
then closes the loop with it still pending. A task given up on that way is ``abandon``-ed:
kept referenced (so it is never collected mid-run) and not reported as "destroyed but pending".

The loop is uvloop's where uvloop is installed (a dependency everywhere but Windows), as it costs
less CPU per callback, task and socket than asyncio's (``bench/runner_overhead.py --loops
uvloop,asyncio``); ``ANPORD_LOOP=asyncio`` asks for asyncio's own, which is also the loop wherever
uvloop cannot be imported.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["IGNORED_CANCELLATION", "SHUTDOWN_GRACE", "abandon", "abandoned", "loop_kind",
           "new_event_loop", "run_bounded"]

T = TypeVar("T")

# How long tasks still pending when the run's main coroutine returns get to end once cancelled.
SHUTDOWN_GRACE = 2.0

# How a trial's log, and its reason, say that its agent swallowed the CancelledError.
IGNORED_CANCELLATION = "the agent ignored its cancellation"

_ABANDONED: list[asyncio.Task[Any]] = []

def loop_kind() -> str:
    """The loop a run gets: asyncio's when ``ANPORD_LOOP=asyncio`` asks or uvloop is not
    importable, else uvloop's."""
    asked = os.environ.get("ANPORD_LOOP", "").strip().lower()
    if asked == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:  # not installed (or no build for this platform)
        return "asyncio"
    return "uvloop"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of ``loop_kind()``."""
    if loop_kind() == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def abandon(task: asyncio.Future[Any]) -> None:
    """Give up on ``task``, which ignored its cancellation: it stays pending until the loop closes."""
    if isinstance(task, asyncio.Task) and task not in _ABANDONED:
        # Private flag of asyncio.Task: asked for on purpose, the "destroyed but pending" report
        # at the process's exit would only repeat what the trial already says.
        task._log_destroy_pending = False  # type: ignore[attr-defined]
        # Those that ended since are let go: a long-lived server abandons one per stubborn turn.
        _ABANDONED[:] = [t for t in _ABANDONED if not t.done()]
        _ABANDONED.append(task)


def abandoned() -> list[asyncio.Task[Any]]:
    """The tasks given up on so far that are still pending."""
    return [t for t in _ABANDONED if not t.done()]


def run_bounded(main: Coroutine[Any, Any, T], grace: float = SHUTDOWN_GRACE) -> T:
    """``asyncio.run(main)``, except that tasks still pending at the end get ``grace`` seconds
    after their cancellation, and are abandoned if they are still not done."""
    loop = new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        try:
            _cancel_leftovers(loop, grace)
            loop.run_until_complete(loop.shutdown_asyncgens())
            # Bounded too: a thread stuck in an ``asyncio.to_thread`` call is not waited for.
            loop.run_until_complete(_bounded(loop.shutdown_default_executor(), grace))
        finally:
            # Tasks started during the shutdown by those given up on (a cancelled
            # ``asyncio.shield`` leaves its inner task running, the agent shields another) had
            # their grace period too: given up on as well, not reported as destroyed.
            for task in asyncio.all_tasks(loop):
                if not task.done():
                    abandon(task)
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop, grace: float) -> None:
    # Those abandoned already had their grace period.
    pending = [t for t in asyncio.all_tasks(loop) if not t.done() and t not in _ABANDONED]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.wait(pending, timeout=grace))
    for task in pending:
        if not task.done():
            abandon(task)
        elif not task.cancelled() and task.exception() is not None:
            # As asyncio.run does: an error nobody retrieved is reported, not lost.
            loop.call_exception_handler({
                "message": "unhandled exception during the run's shutdown",
                "exception": task.exception(),
                "task": task,
            })


async def _bounded(coro: Coroutine[Any, Any, None], grace: float) -> None:
    try:
        await asyncio.wait_for(coro, grace)
    except TimeoutError:
        pass
