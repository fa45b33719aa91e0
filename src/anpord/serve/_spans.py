"""A traced turn's spans leave the server when the turn ends, not a batch delay later.

A client running a traced eval (``traceparent`` on the turn) waits, after the turn's stream, for
a span of the turn to reach its receiver (``harnesses.http``, ``traces_wait``). An instrumented
agent's ``BatchSpanProcessor`` exports on its own schedule (``OTEL_BSP_SCHEDULE_DELAY``, 5 s by
default), so each turn would wait out that delay. When a traced turn ends the server has what
has ended exported now (the tracer provider's ``force_flush``, in a thread: it blocks until the
exporter is done), without holding the turn's last line for it: the client's own wait covers
the export. Flushes are coalesced: one runs at a time, and turns that end while it runs get one
more after it (their spans may have ended after the running one took the queue), so a hundred
turns ending together cost a few exports, not a hundred.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["FLUSH_TIMEOUT_MS", "SpanFlush"]

FLUSH_TIMEOUT_MS = 2000  # an exporter that does not answer holds a turn's end no longer than this


class SpanFlush:
    def __init__(self) -> None:
        self._running: asyncio.Future[Any] | None = None  # the flush under way
        self._again = False  # a turn ended while it ran: one more after it

    def kick(self) -> None:
        """Have every span ended so far handed to the exporter soon (nothing to do without an
        SDK provider). A failing exporter is the agent's to report; a hung one is given up on
        after ``FLUSH_TIMEOUT_MS``."""
        provider = _provider()
        if provider is None:
            return
        if self._running is None:
            self._running = self._spawn(provider)
        else:
            self._again = True

    def _spawn(self, provider: Any) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(asyncio.to_thread(provider.force_flush, FLUSH_TIMEOUT_MS))
        task.add_done_callback(lambda done: self._after(done, provider))
        return task

    def _after(self, done: asyncio.Future[Any], provider: Any) -> None:
        if not done.cancelled():
            done.exception()  # retrieved: never reported as unretrieved
        self._running = None
        if self._again:
            self._again = False
            self._running = self._spawn(provider)  # for the turns that ended meanwhile


def _provider() -> Any:
    """The agent's SDK tracer provider, or None (no OpenTelemetry, or only the API's no-op one)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    return provider if callable(getattr(provider, "force_flush", None)) else None
