"""Event-loop stalls: who blocked the loop, and for how long.

Every in-process trial shares one event loop. An async agent that blocks it (``time.sleep`` instead
of ``await asyncio.sleep``, a CPU-bound loop) stops every other trial too; without this, their
deadlines would pass during the stall and they would be ``timed_out`` for another's fault.

A monitor thread posts a heartbeat to the loop every ``TICK``. When one is not answered within
``THRESHOLD``, the loop is stalled: the thread reads which task is running (asyncio's own
current-task table) and the trial that task belongs to (tasks are tagged with their trial when
created, see ``_contain``). When the heartbeat is answered, the stall is recorded — on the loop
thread, before any deadline timer that came due meanwhile can run. A trial's deadline then leaves
out the time lost to other trials' stalls, and the trial that caused one is told so.
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
        self._answered = threading.Event()
        self._suspect: str | None = None  # the trial running when the stall was noticed
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

    def _running_trial(self) -> str | None:
        task = asyncio.tasks._current_tasks.get(self.loop)  # read-only, atomic under the GIL
        return getattr(task, "_anpord_trial", None) if task is not None else None

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._answered.clear()
            with self._lock:
                self._posted = time.monotonic()
                self._suspect, self._stalled = None, False
            try:
                self.loop.call_soon_threadsafe(self._heartbeat)
            except RuntimeError:  # the loop is closed
                return
            if not self._answered.wait(THRESHOLD):
                # Stalled: keep looking at who runs until the heartbeat gets through.
                while not self._answered.wait(TICK / 2) and not self._stop.is_set():
                    suspect = self._running_trial()
                    with self._lock:
                        self._stalled = True
                        if self._suspect is None:
                            self._suspect = suspect
            self._stop.wait(TICK)

    # -- on the loop thread ------------------------------------------------------------------

    def _heartbeat(self) -> None:
        now = time.monotonic()
        with self._lock:
            stalled, posted, suspect = self._stalled, self._posted, self._suspect
        if stalled or now - posted >= THRESHOLD:
            self.stalls.append(Stall(posted, now, suspect))
        self._answered.set()

    def lost_time(self, trial: str, since: float) -> float:
        """Seconds since ``since`` that the loop spent stalled by anything but ``trial``."""
        lost = 0.0
        for s in self.stalls:
            if s.end > since and s.culprit != trial:
                lost += s.end - max(s.start, since)
        return lost

    def caused_by(self, trial: str) -> list[Stall]:
        return [s for s in self.stalls if s.culprit == trial and s.duration >= REPORT]
