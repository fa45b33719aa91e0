"""Keep ``SystemExit`` and ``KeyboardInterrupt`` inside the trial whose code raised them.

asyncio lets these two out of any task, and out of the event loop with them: one ``sys.exit()``
in a fire-and-forget task that an agent or a test started would end the whole run. The runner
installs ``task_factory`` on its loop; a task created while a trial runs (the trial's context
holds an ``ExitLog`` in ``CURRENT_EXITS``) is wrapped so that such an exit is recorded for that
trial, which fails, and the task ends with an ordinary ``TaskExited`` error instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import traceback
from typing import Any

from ._errors import exception_line

__all__ = ["CURRENT_EXITS", "ExitLog", "TaskExited", "contains_exits", "task_factory"]


class ExitLog:
    """The exits raised in one trial's tasks: (one-line summary, traceback) pairs. ``trial`` names
    the trial, so a task it started can be blamed for stalling the event loop (see _stalls)."""

    __slots__ = ("entries", "open", "trial")

    def __init__(self, trial: str | None = None) -> None:
        self.entries: list[tuple[str, str]] = []
        self.open = True  # closed once the trial's verdict is decided
        self.trial = trial

    def record(self, summary: str, tb: str) -> bool:
        if self.open:
            self.entries.append((summary, tb))
        return self.open


CURRENT_EXITS: contextvars.ContextVar[ExitLog | None] = contextvars.ContextVar(
    "anpord_current_exits", default=None
)


class TaskExited(Exception):
    """A task raised SystemExit or KeyboardInterrupt (recorded for its trial, if still running)."""


# Code objects of anpord's own task bodies that already catch SystemExit/KeyboardInterrupt (the
# trial's body, a Python agent's turn): their tasks need no wrapper, which at thousands of trials
# a second is a measurable saving.
_CONTAINED_ALREADY: set[Any] = set()


def contains_exits(fn: Any) -> Any:
    """Mark a coroutine function whose body turns SystemExit/KeyboardInterrupt into ordinary
    results itself (a decorator)."""
    _CONTAINED_ALREADY.add(fn.__code__)
    return fn


def task_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    # kwargs: context (3.11+), name (3.13.3+), eager_start (3.14+), all handed on to the Task.
    context = kwargs.get("context")
    log = context.get(CURRENT_EXITS) if context is not None else CURRENT_EXITS.get()
    if log is None or not inspect.iscoroutine(coro):
        return asyncio.Task(coro, loop=loop, **kwargs)
    if coro.cr_code in _CONTAINED_ALREADY:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        task._anpord_trial = log.trial  # type: ignore[attr-defined]
        return task
    recorded: list[bool] = []
    task = asyncio.Task(_contained(coro, log, recorded), loop=loop, **kwargs)
    # Which trial's code this task runs, for blaming a stall of the loop on it (see _stalls).
    task._anpord_trial = log.trial  # type: ignore[attr-defined]

    def done(task: asyncio.Task[Any]) -> None:
        if recorded:
            # The trial has it: no "exception was never retrieved" if nobody awaits the task.
            # (Other exceptions, and exits after the trial ended, keep asyncio's usual report.)
            task.exception()
        elif inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
            # Cancelled before it ran: the wrapper never started it. Close it quietly, as
            # asyncio does with a task's coroutine, rather than let it warn "never awaited".
            coro.close()

    task.add_done_callback(done)
    return task


async def _contained(coro: Any, log: ExitLog, recorded: list[bool]) -> Any:
    try:
        return await coro
    except (SystemExit, KeyboardInterrupt) as exc:
        summary = exception_line(exc)
        if log.record(summary, "".join(traceback.format_exception(exc))):
            recorded.append(True)
            raise TaskExited(f"a task raised {summary}") from exc
        raise TaskExited(f"a task raised {summary} after its trial had ended") from exc
