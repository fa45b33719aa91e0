"""Route what agents and tests print to their trial's log, never into the run's own output."""

from __future__ import annotations

import contextvars
import io
import sys
import weakref
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

__all__ = ["CURRENT_LOG", "captured_output", "flush_partial"]

CURRENT_LOG: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "anpord_trial_log", default=None
)


class _Router(io.TextIOBase):
    """A stand-in for sys.stdout/sys.stderr: inside a trial, lines go to that trial's log."""

    def __init__(self, real: TextIO, stream_name: str):
        self._real = real
        self._name = stream_name
        # A trial's unfinished line, keyed by its log sink itself: an id() could be reused by a
        # later trial's sink and hand it this one's leftover.
        self._partial: weakref.WeakKeyDictionary[Callable[[str], None], str] = weakref.WeakKeyDictionary()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        sink = CURRENT_LOG.get()
        if sink is None:
            return self._real.write(text)
        buf = self._partial.get(sink, "") + text
        *lines, rest = buf.split("\n")
        for line in lines:
            self._emit(sink, line)
        if rest:
            self._partial[sink] = rest
        else:
            self._partial.pop(sink, None)
        return len(text)

    def _emit(self, sink: Callable[[str], None], line: str) -> None:
        sink(line if self._name == "stdout" else f"[stderr] {line}")

    def finish(self, sink: Callable[[str], None]) -> None:
        """Log the trial's unfinished line, if any."""
        if not self._partial:
            return  # the usual case: nothing printed without a newline
        rest = self._partial.pop(sink, None)
        if rest:
            self._emit(sink, rest)

    def flush(self) -> None:
        if CURRENT_LOG.get() is None:
            self._real.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._real, "encoding", "utf-8")


def flush_partial(sink: Callable[[str], None]) -> None:
    """A trial ends: what it printed without a final newline still goes to its log."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, _Router):
            stream.finish(sink)


@contextmanager
def captured_output() -> Iterator[tuple[TextIO, TextIO]]:
    """Install the routers for the duration of a run; yields the real (stdout, stderr)."""
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout = _Router(real_out, "stdout")  # type: ignore[assignment]
    sys.stderr = _Router(real_err, "stderr")  # type: ignore[assignment]
    try:
        yield real_out, real_err
    finally:
        sys.stdout, sys.stderr = real_out, real_err
