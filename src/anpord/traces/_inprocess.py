"""Spans made in this process (Python agents, which share the runner's process): one span
processor, installed once on the global tracer provider, routes each span to the trial whose
context started it (``CURRENT_TRACE``), or to the trial of its parent span. No provider per trial:
an agent module's ``trace.get_tracer(...)`` at import time keeps working.

When no SDK provider is set yet, one is set (the agent's code uses the API; the SDK is what makes
spans real); when the agent set its own, the processor is added to it, alongside its exporters.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ._receiver import CURRENT_TRACE, TraceService
from ._spans import Span, clip_string, limit_attributes

__all__ = ["install", "from_sdk"]

_lock = threading.Lock()
_installed: list[Any] = []


def install(log: Callable[[str], None]) -> None:
    """Once per process. Without the SDK, a log line says what to install (the trial runs on)."""
    if _installed:
        return
    with _lock:
        if _installed:
            return
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
        except ImportError:
            log("traces: a Python agent's spans need the OpenTelemetry SDK in this process: "
                "pip install opentelemetry-sdk")
            return
        provider = trace.get_tracer_provider()
        if not hasattr(provider, "add_span_processor"):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
            provider = trace.get_tracer_provider()  # the one that won, if another was set meanwhile
        router = _router_class()()
        provider.add_span_processor(router)  # type: ignore[attr-defined]
        _installed.append(router)


def _router_class() -> type:
    from opentelemetry.sdk.trace import SpanProcessor

    class Router(SpanProcessor):  # type: ignore[misc]
        """Remembers each span's trial at its start (the agent's context), delivers it at its end."""

        def __init__(self) -> None:
            self._open: dict[int, TraceService] = {}

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            sink = CURRENT_TRACE.get()
            if sink is None and span.parent is not None:
                sink = self._open.get(span.parent.span_id)
            if sink is not None:
                self._open[span.context.span_id] = sink

        def on_end(self, span: Any) -> None:
            sink = self._open.pop(span.context.span_id, None)
            if sink is not None:
                sink.take([from_sdk(span)])

        def shutdown(self) -> None:
            self._open.clear()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return Router


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return clip_string(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


_STATUS = {0: "unset", 1: "ok", 2: "error"}


def from_sdk(span: Any) -> Span:
    """An SDK ``ReadableSpan`` as the receiver's span (what an OTLP export of it would carry)."""
    ctx = span.context
    status = span.status
    return Span(
        trace_id=f"{ctx.trace_id:032x}", span_id=f"{ctx.span_id:016x}",
        parent_span_id=f"{span.parent.span_id:016x}" if span.parent is not None else None,
        name=span.name,
        kind=int(span.kind.value) + 1,  # the SDK counts from INTERNAL = 0, OTLP from 1
        start=(span.start_time or 0) / 1e9, end=(span.end_time or 0) / 1e9,
        status=_STATUS.get(int(status.status_code.value), "unset"), status_message=status.description or "",
        attributes=limit_attributes({k: _plain(v) for k, v in (span.attributes or {}).items()}),
        resource={k: _plain(v) for k, v in span.resource.attributes.items()},
        events=[(e.name, {k: _plain(v) for k, v in (e.attributes or {}).items()})
                for e in span.events if e.name == "exception"],
        scope=span.instrumentation_scope.name if span.instrumentation_scope else "",
    )
