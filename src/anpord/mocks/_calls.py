"""Calling the functions a mock declaration holds (route functions, MCP tool functions).

They run in the runner's process, whose one event loop serves every trial: an ``async`` one is
awaited there, a plain one runs in a thread of its own, so one that blocks (``time.sleep``, a
synchronous HTTP call) delays only its own answer, and the trial's timeout still fires on time.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["call_user"]


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a daemon thread: unlike the loop's executor, a function that never returns
    neither takes a worker others wait for nor keeps the run from ending."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return  # the caller gave up (its trial timed out)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def run() -> None:
        try:
            value, error = context.run(fn, *args), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting any more

    threading.Thread(target=run, name="anpord-mock-fn", daemon=True).start()
    return await future


async def call_user(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``'s value: awaited on the loop when ``fn`` is async, else from a thread (an
    awaitable it returns is awaited on the loop)."""
    value = fn(*args) if _is_async(fn) else await _in_thread(fn, *args)
    if inspect.isawaitable(value):
        value = await value
    return value
