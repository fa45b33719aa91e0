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
from ._spans import MAX_STRING, Span, clip_string, limit_attributes

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
    if type(value) is str:
        return value if len(value) <= MAX_STRING else clip_string(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


_STATUS = ("unset", "ok", "error")


def from_sdk(span: Any) -> Span:
    """An SDK ``ReadableSpan`` as the receiver's span (what an OTLP export of it would carry).
    On the agent's own path (every span it ends): kept to plain attribute reads."""
    ctx = span.context
    status = span.status
    parent = span.parent
    # ``span.attributes`` is a read-only view of the SDK's BoundedAttributes, whose iteration is
    # Python code taking a lock per key: its plain dict, when there is one, is read directly.
    raw = getattr(getattr(span, "_attributes", None), "_dict", None)
    attrs = raw if type(raw) is dict else span.attributes
    attributes = {k: v if type(v) is not str and type(v) is not tuple else _plain(v) for k, v in attrs.items()} \
        if attrs else {}
    return Span(
        f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}",
        f"{parent.span_id:016x}" if parent is not None else None,
        span.name,
        span.kind.value + 1,  # the SDK counts from INTERNAL = 0, OTLP from 1
        (span.start_time or 0) / 1e9, (span.end_time or 0) / 1e9,
        _STATUS[status.status_code.value], status.description or "",
        limit_attributes(attributes),
        {},  # the resource: this process's, the same for every trial
        [(e.name, {k: _plain(v) for k, v in (e.attributes or {}).items()})
         for e in span.events if e.name == "exception"] if span.events else [],
        span.instrumentation_scope.name if span.instrumentation_scope else "",
    )
