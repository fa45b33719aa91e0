"""Keep ``SystemExit`` and ``KeyboardInterrupt`` inside the trial whose code raised them.

asyncio lets these two out of any task, and out of the event loop with them: one ``sys.exit()``
in a fire-and-forget task that an agent or a test started would end the whole run. The runner
installs ``task_factory`` on its loop; a task created while a trial runs (the trial's context
holds ``CURRENT_FAULT``) is wrapped so that such an exit is reported to that trial, which fails,
and then ends the task with an ordinary ``TaskExited`` error instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import traceback
from collections.abc import Callable, Coroutine, Generator
from typing import Any

__all__ = ["CURRENT_FAULT", "TaskExited", "task_factory"]

# Set by the runner for the duration of a trial: records an exit raised in one of its tasks.
CURRENT_FAULT: contextvars.ContextVar[Callable[[str, str], None] | None] = contextvars.ContextVar(
    "anpord_current_fault", default=None
)


class TaskExited(Exception):
    """A task raised SystemExit or KeyboardInterrupt; its trial has been failed for it."""


def task_factory(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
    context: contextvars.Context | None = None,
) -> asyncio.Task[Any]:
    report = context.get(CURRENT_FAULT) if context is not None else CURRENT_FAULT.get()
    if report is None or not inspect.iscoroutine(coro):
        return asyncio.Task(coro, loop=loop, context=context)
    exited: list[bool] = []
    task = asyncio.Task(_contained(coro, report, exited), loop=loop, context=context)

    def done(task: asyncio.Task[Any]) -> None:
        if exited:
            # Reported to the trial already: no "exception was never retrieved" if nobody
            # awaits the task. (Other exceptions keep asyncio's usual report.)
            task.exception()
        elif inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
            # Cancelled before it ran: the wrapper never started it. Close it quietly, as
            # asyncio does with a task's coroutine, rather than let it warn "never awaited".
            coro.close()

    task.add_done_callback(done)
    return task


async def _contained(coro: Any, report: Callable[[str, str], None], exited: list[bool]) -> Any:
    try:
        return await coro
    except (SystemExit, KeyboardInterrupt) as exc:
        exited.append(True)
        text = str(exc).strip().splitlines()
        name = type(exc).__name__
        report(f"{name}: {text[0]}" if text else name, "".join(traceback.format_exception(exc)))
        raise TaskExited(f"a task raised {name}") from None
