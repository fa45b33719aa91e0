"""Start a coroutine at once, and give it a task of its own only if it has to wait.

A Python agent's turn runs in a task of its own, because the turn may park (``request_input``)
while the agent's coroutine stays suspended. Most turns of a quick agent never wait at all: for
them the task is a loop round trip and two callbacks for nothing. ``start_eagerly`` runs the
coroutine's first step now (as Python 3.12's eager tasks do, on every version here);
a coroutine that finishes there comes back as a finished future, one that waits carries on in a
task from where it stopped. The first step runs in a copy of the caller's context, as a task's
would, so what the coroutine sets there does not leak into the caller. A first step that held
the loop (code that blocks it) delivers its result on the loop's next round, as a task would:
timers that fell due meanwhile — its trial's deadline — run first.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["start_eagerly"]

T = TypeVar("T")

# A first step longer than this held the loop: its result waits for the loop's next round.
_HELD = 0.001


def start_eagerly(coro: Coroutine[Any, Any, T], trial: str | None = None) -> asyncio.Future[T]:
    """``coro`` started now: a finished future if its first step ran it to its end, else the task
    it goes on in. ``trial`` names the trial whose code it runs (stall blame, see ``_stalls``)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    started = time.monotonic()
    done: asyncio.Future[T] = loop.create_future()
    try:
        waiting_on = context.run(coro.send, None)
    except StopIteration as stop:
        _settle(loop, done, started, done.set_result, stop.value)
        return done
    except asyncio.CancelledError:
        _settle(loop, done, started, lambda _: done.cancel(), None)
        return done
    except BaseException as exc:  # noqa: BLE001 - delivered through the future, as a task would
        _settle(loop, done, started, done.set_exception, exc)
        return done
    # A future awaited is flagged so until a task takes it, and another await of it while flagged
    # is refused ("await wasn't used with future"): cleared now, as a task would clear it at
    # once, so every turn's first step can await one shared future (a lazily started client).
    blocking = getattr(waiting_on, "_asyncio_future_blocking", False) is True
    if blocking:
        waiting_on._asyncio_future_blocking = False
    rest = _resume(coro, waiting_on, blocking)
    next(rest)
    task = asyncio.Task(rest, loop=loop, context=context)
    task._anpord_trial = trial  # type: ignore[attr-defined]
    return task


def _settle(loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any], started: float,
            deliver: Callable[[Any], object], value: Any) -> None:
    if time.monotonic() - started <= _HELD:
        deliver(value)
    else:
        loop.call_soon(lambda: None if done.done() else deliver(value))


@types.coroutine
def _resume(coro: Coroutine[Any, Any, T], waiting_on: Any, blocking: bool) -> Generator[Any, None, T]:
    """Drive ``coro`` on from a suspension: what it waits on is handed to the task (which waits
    for it as for any awaited future), then the task's wake-up — or its cancellation — goes on
    into ``coro``. Primed by ``start_eagerly``, so a cancellation that comes before the task's
    first step reaches ``coro`` too. ``blocking``: the first step awaited ``waiting_on`` (a
    future whose flag ``start_eagerly`` cleared)."""
    thrown: BaseException | None = None
    try:
        yield  # primed here; the task's first step goes on from this point
    except BaseException as exc:  # noqa: BLE001 - cancelled before its first step
        thrown = exc
    if blocking and thrown is None:
        waiting_on._asyncio_future_blocking = True  # awaited, as the task taking it expects
    while True:
        if thrown is None:
            try:
                yield waiting_on
            except BaseException as exc:  # noqa: BLE001 - a cancellation, for the coroutine
                thrown = exc
        try:
            waiting_on = coro.send(None) if thrown is None else coro.throw(thrown)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        thrown = None
