"""Event-loop stalls: who blocked the loop, and for how long.

Every in-process trial shares one event loop. An async agent that blocks it (``time.sleep`` instead
of ``await asyncio.sleep``, a CPU-bound loop) stops every other trial too; without this, their
deadlines would pass during the stall and they would be ``timed_out`` for another's fault.

A monitor thread posts a heartbeat to the loop every ``TICK``. When one is not answered within
``THRESHOLD``, the loop is stalled: the thread keeps reading which task is running (asyncio's own
current-task table) until the heartbeat gets through. When it is answered, the stall is recorded
on the loop thread. A deadline timer that came due during the stall may run before the heartbeat
(uvloop runs due timers before ready callbacks; asyncio the other way round), so reading the
lost time settles the heartbeat still in flight first: the stall it measures is recorded then,
and the heartbeat, when it runs, has nothing left to do. A trial's deadline then leaves out the
time lost to other trials' stalls, and the trial that caused one is told so.

A stall is blamed on a trial (its tasks are tagged with it when created, see ``_contain``) only
on evidence that its task held the loop throughout: the same task running in every look, looks
from the first half of the stall to its end. A loop that is merely slow — the machine loaded, the
whole process descheduled — shows another task in some look, or is only seen at its end (the
monitor thread was held up too), and blames no one: whichever task happened to be running when
the process got the CPU back is not the cause.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

__all__ = ["Stall", "StallMonitor", "THRESHOLD"]

TICK = 0.05
THRESHOLD = 0.25  # a heartbeat answered later than this: the loop was stalled
REPORT = 1.0  # a stall this long is reported on the trial that caused it
MIN_LOOKS = 3  # looks at the running task, all seeing the same one, before a stall is blamed


@dataclass(frozen=True)
class Stall:
    start: float  # time.monotonic()
    end: float
    culprit: str | None  # the trial whose code blocked the loop, when it could be told

    @property
    def duration(self) -> float:
        return self.end - self.start


class StallMonitor:
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.stalls: list[Stall] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._posted = 0.0
        self._beat = 0  # the heartbeat in flight (each posted one carries its number)
        self._answered = threading.Event()
        # What the looks during the current stall saw: the task each time (None once two looks
        # disagreed), when the first look was, how many there were.
        self._task: object | None = None
        self._mixed = False
        self._first_look = 0.0
        self._looks = 0
        self._stalled = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="anpord-stall-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._answered.set()
        if self._thread is not None:
            self._thread.join(timeout=1)

    # -- the monitor thread ------------------------------------------------------------------

    def _running_task(self) -> object | None:
        return asyncio.tasks._current_tasks.get(self.loop)  # type: ignore[attr-defined]  # read-only, atomic under the GIL

    def _look(self) -> None:
        task, now = self._running_task(), time.monotonic()
        with self._lock:
            self._stalled = True
            if self._looks == 0:
                self._task, self._first_look = task, now
            elif task is not self._task:
                self._mixed = True
            self._looks += 1

    def _watch(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                self._answered.clear()
                self._beat += 1
                self._posted = time.monotonic()
                self._task, self._mixed, self._looks, self._stalled = None, False, 0, False
                beat = self._beat
            try:
                self.loop.call_soon_threadsafe(self._heartbeat, beat)
            except RuntimeError:  # the loop is closed
                return
            if not self._answered.wait(THRESHOLD):
                # Stalled: keep looking at who runs until the heartbeat gets through.
                self._look()
                while not self._answered.wait(TICK / 2) and not self._stop.is_set():
                    self._look()
            self._stop.wait(TICK)

    def _culprit(self, posted: float, now: float) -> str | None:
        """The trial whose task held the loop from ``posted`` to ``now``, when the looks show
        it did (called under the lock)."""
        if self._mixed or self._task is None or self._looks < MIN_LOOKS:
            return None
        if self._first_look - posted > (now - posted) / 2:
            return None  # first seen late in the stall: no evidence of who held it before
        return getattr(self._task, "_anpord_trial", None)

    # -- on the loop thread ------------------------------------------------------------------

    def _heartbeat(self, beat: int | None = None) -> None:
        """The heartbeat ``beat`` got through (``None``: whichever is in flight): the loop runs
        again, so a stall it was stuck in is over, and recorded."""
        now = time.monotonic()
        with self._lock:
            if self._answered.is_set() or (beat is not None and beat != self._beat):
                return  # settled already
            stalled, posted = self._stalled, self._posted
            culprit = self._culprit(posted, now) if stalled else None
            if stalled or now - posted >= THRESHOLD:
                self.stalls.append(Stall(posted, now, culprit))
            self._answered.set()

    def lost_time(self, trial: str, since: float) -> float:
        """Seconds since ``since`` that the loop spent stalled by anything but ``trial``
        (called on the loop thread: a stall still waiting for its heartbeat is over)."""
        if not self._answered.is_set():
            self._heartbeat()
        lost = 0.0
        for s in self.stalls:
            if s.end > since and s.culprit != trial:
                lost += s.end - max(s.start, since)
        return lost

    def caused_by(self, trial: str) -> list[Stall]:
        if not self._answered.is_set():
            self._heartbeat()
        return [s for s in self.stalls if s.culprit == trial and s.duration >= REPORT]
