"""A live region: lines at the bottom of a terminal, erased and redrawn in place.

Permanent lines are printed above it. Redraws are throttled (at most ``1 / REDRAW_INTERVAL`` a
second) so 10,000 fast trials cost a handful of redraws, not 10,000: lines that arrive between two
redraws wait for the next one, which an event loop, when one is running, is asked to schedule.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

REDRAW_INTERVAL = 0.1

_ERASE_DOWN = "\x1b[J"


class LiveRegion:
    def __init__(self, write: Callable[[str], None], draw: Callable[[], list[str]]) -> None:
        self._write = write
        self._draw = draw  # returns the region's lines, each narrower than the terminal
        self._height = 0  # lines of the region now on screen
        self._pending: list[str] = []  # permanent lines waiting for the next paint
        self._last_paint = 0.0
        self._timer: Any = None  # asyncio.TimerHandle of a deferred paint
        self.paints = 0

    def print(self, lines: list[str]) -> None:
        self._pending.extend(lines)
        self.refresh()

    def refresh(self, force: bool = False) -> None:
        """Paint now if due, else make sure a paint follows shortly."""
        if force or time.monotonic() - self._last_paint >= REDRAW_INTERVAL:
            self._paint()
        elif not self._schedule() and self._pending:
            # No event loop to come back later: print the lines now; the region waits for a paint.
            self._write(self._erase() + "\n".join(self._pending) + "\n")
            self._pending.clear()

    def close(self) -> None:
        """Erase the region and print what is pending; the screen is then plain lines again."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = self._erase()
        if self._pending:
            text += "\n".join(self._pending) + "\n"
            self._pending.clear()
        if text:
            self._write(text)

    def _schedule(self) -> bool:
        if self._timer is not None:
            return True
        asyncio = sys.modules.get("asyncio")  # never imported just for this: no module, no loop
        if asyncio is None:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        delay = max(REDRAW_INTERVAL - (time.monotonic() - self._last_paint), 0.0)
        self._timer = loop.call_later(delay, self._deferred_paint)
        return True

    def _deferred_paint(self) -> None:
        self._timer = None
        self._paint()

    def _erase(self) -> str:
        if not self._height:
            return ""
        up = f"\x1b[{self._height - 1}A" if self._height > 1 else ""
        self._height = 0
        return "\r" + up + _ERASE_DOWN

    def _paint(self) -> None:
        self._last_paint = time.monotonic()
        self.paints += 1
        parts = [self._erase()]
        if self._pending:
            parts.append("\n".join(self._pending) + "\n")
            self._pending.clear()
        region = self._draw()
        # No newline after the last line: the cursor stays on it, so erasing never leaves a blank.
        parts.append("\n".join(region))
        self._height = len(region)
        self._write("".join(parts))
