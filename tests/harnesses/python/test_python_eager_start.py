"""A Python agent's turn starts at once (``anpord._eager.start_eagerly``): one that answers without
waiting needs no task of its own; one that waits goes on in a task exactly as before."""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

import pytest

from anpord._eager import start_eagerly

_var: contextvars.ContextVar[str] = contextvars.ContextVar("eager_test_var", default="caller")


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_coroutine_that_does_not_wait_ends_in_its_first_step_without_a_task() -> None:
    async def quick() -> int:
        _var.set("agent")
        return 7

    async def main() -> None:
        before = len(asyncio.all_tasks())
        future = start_eagerly(quick(), "case v #0")
        assert future.done() and future.result() == 7
        assert len(asyncio.all_tasks()) == before  # no task was made
        assert _var.get() == "caller"  # what it set stays in its own context

    _run(main())


def test_a_coroutine_that_waits_goes_on_in_a_task_tagged_with_its_trial() -> None:
    async def slow() -> str:
        _var.set("agent")
        await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        return _var.get()

    async def main() -> None:
        future = start_eagerly(slow(), "case v #1")
        assert isinstance(future, asyncio.Task) and not future.done()
        assert future._anpord_trial == "case v #1"  # type: ignore[attr-defined]
        assert await future == "agent"  # its context carried on with it
        assert _var.get() == "caller"

    _run(main())


def test_coroutines_started_at_once_can_all_wait_on_one_shared_future() -> None:
    # A lazily started shared set-up (a client, a server) awaited by every concurrent turn: each
    # first step yields the same future before any task has taken it.
    async def main() -> None:
        shared = asyncio.ensure_future(asyncio.sleep(0.01, result="ready"))

        async def turn(n: int) -> str:
            return f"{await shared} {n}"

        futures = [start_eagerly(turn(n), f"case v #{n}") for n in range(5)]
        assert await asyncio.gather(*futures) == [f"ready {n}" for n in range(5)]

    _run(main())


def test_errors_and_cancellations_arrive_through_the_future() -> None:
    async def boom() -> None:
        raise ValueError("bad agent")

    async def cancels_itself() -> None:
        raise asyncio.CancelledError

    async def main() -> None:
        failed = start_eagerly(boom())
        with pytest.raises(ValueError, match="bad agent"):
            failed.result()
        assert start_eagerly(cancels_itself()).cancelled()

    _run(main())


@pytest.mark.parametrize("cancel_after", [None, 0.01])
def test_a_cancel_reaches_the_waiting_coroutine_even_before_its_task_ran(cancel_after: float | None) -> None:
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("finally")

    async def main() -> None:
        future = start_eagerly(waits())
        if cancel_after is not None:
            await asyncio.sleep(cancel_after)
        future.cancel()
        with pytest.raises(asyncio.CancelledError):
            await future
        assert future.cancelled()

    _run(main())
    assert seen == ["cancelled", "finally"]


def test_a_first_step_that_blocks_the_loop_lets_due_timers_run_before_its_result() -> None:
    order: list[str] = []

    async def blocks() -> str:
        time.sleep(0.05)  # holds the loop, as an agent that blocks does
        return "answer"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_at(loop.time() + 0.01, order.append, "deadline")
        future = start_eagerly(blocks())
        assert not future.done()  # delivered on the loop's next round, as a task's would be
        future.add_done_callback(lambda f: order.append(f.result()))
        await asyncio.sleep(0.02)

    _run(main())
    assert order == ["deadline", "answer"]
