"""Deadlines for thousands of trials a second, on one timer.

A ``loop.call_later`` per trial is a timer handle pushed on the loop's heap and cancelled again
almost at once — nearly every trial ends long before its deadline. ``Deadlines`` keeps its own
heap of ``(when, seq, callback)`` and one loop timer for the earliest entry; cancelling is
marking an entry dead. With the same timeout for every trial, deadlines arrive in order, so a new
one never moves the timer.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

__all__ = ["Deadline", "Deadlines"]


class Deadline:
    __slots__ = ("when", "callback", "alive", "owner")

    def __init__(self, when: float, callback: Callable[[], None], owner: Deadlines):
        self.when, self.callback, self.alive, self.owner = when, callback, True, owner

    def cancel(self) -> None:
        if self.alive:
            self.alive = False
            self.callback = _nothing  # let go of the trial
            self.owner._cancelled()


def _nothing() -> None:
    pass


class Deadlines:
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._dead = 0  # cancelled entries still in the heap

    def at(self, when: float, callback: Callable[[], None]) -> Deadline:
        """Call ``callback`` at loop time ``when`` unless cancelled first."""
        entry = Deadline(when, callback, self)
        heapq.heappush(self._heap, (when, next(self._seq), entry))
        if when < self._timer_at:
            self._arm(when)
        return entry

    def _cancelled(self) -> None:
        # Cancelled entries wait in the heap until their time; when they are most of it (a
        # long timeout, thousands of trials a second), drop them all at once.
        self._dead += 1
        if self._dead > 1024 and self._dead * 2 > len(self._heap):
            self._heap = [item for item in self._heap if item[2].alive]
            heapq.heapify(self._heap)
            self._dead = 0

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        now = self.loop.time()
        heap = self._heap
        while heap and (heap[0][0] <= now or not heap[0][2].alive):
            _, _, entry = heapq.heappop(heap)
            if entry.alive:
                entry.alive = False
                entry.callback()
            else:
                self._dead -= 1
        if heap:
            self._arm(heap[0][0])
