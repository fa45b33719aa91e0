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

from ..events import Event
from ._map import JSON_ATTRIBUTES, events_of, is_json_text
from ._receiver import CURRENT_TRACE, TrialTrace
from ._spans import MAX_ARRAY, MAX_STRING, Clips, clip_attribute, limit_attributes

__all__ = ["install", "sdk_events"]

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
        """Remembers each span's trial at its start (the agent's context) and hands the ended
        span to it (``TrialTrace.arrive``), which turns it into events there and then: the
        SDK's span is read once, while it is fresh, and nothing of it outlives the call."""

        def __init__(self) -> None:
            self._open: dict[int, TrialTrace] = {}

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            sink = CURRENT_TRACE.get()
            if sink is None:
                parent = span.parent
                if parent is None:
                    return
                sink = self._open.get(parent.span_id)
                if sink is None:
                    return
            try:  # the SDK's field: ``context`` is a Python property, called twice a span
                self._open[span._context.span_id] = sink
            except AttributeError:
                self._open[span.context.span_id] = sink

        def on_end(self, span: Any) -> None:
            try:
                sink = self._open.pop(span._context.span_id, None)
            except AttributeError:
                sink = self._open.pop(span.context.span_id, None)
            if sink is not None:
                sink.arrive(span)

        def shutdown(self) -> None:
            self._open.clear()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return Router


def _plain(value: Any, key: str, clips: Clips, top: bool = False) -> Any:
    if type(value) is str:
        if len(value) <= MAX_STRING:
            return value
        return clip_attribute(key, value, clips, is_json_text if top and key in JSON_ATTRIBUTES else None)
    if isinstance(value, (tuple, list)):
        if len(value) > MAX_ARRAY:
            clips.cut(key)
            value = value[:MAX_ARRAY]
        return [_plain(v, key, clips) for v in value]
    return value


def _attributes(span: Any, clips: Clips) -> dict[str, Any]:
    # ``span.attributes`` is a read-only view of the SDK's BoundedAttributes, whose iteration is
    # Python code taking a lock per key: its plain dict, when there is one, is read directly.
    # Ended, the SDK never changes it again, so it is used as it is unless a value needs
    # changing (a tuple as a list, a string past MAX_STRING); nothing here writes to it.
    try:
        attrs = span._attributes._dict
    except AttributeError:
        attrs = None
    if type(attrs) is not dict:
        attrs = dict(span.attributes or {})
    for value in attrs.values():
        kind = type(value)
        if kind is tuple or (kind is str and len(value) > MAX_STRING):
            attrs = limit_attributes(attrs, clips)
            return {k: _plain(v, k, clips, top=True) for k, v in attrs.items()}
    return limit_attributes(attrs, clips)


_STATUS = ("unset", "ok", "error")
# The last trace id written as hex, with its hex (one tuple, replaced whole: threads share it):
# a trial's spans mostly come one trace at a time.
_last_trace: tuple[int, str] = (-1, "")


def sdk_events(span: Any, clips: Clips | None = None) -> list[Event]:
    """An SDK ``ReadableSpan`` straight to its events (``_map.events_of``), with no ``Span`` in
    between: every span of a traced Python agent goes through here. Its fields are read as the
    SDK stores them (each public property is a Python call, and ``events`` copies a list),
    falling back to the properties on an SDK that stores them otherwise; its exception events
    are read only when its status is an error, the one time the mapping looks at them. Ids are
    written with ``int.to_bytes().hex()``, a third of a format spec's cost. What the limits cut
    is noted in ``clips``."""
    if clips is None:
        clips = Clips()
    try:
        ctx, parent, name, kind = span._context, span._parent, span._name, span._kind
        start, end, status = span._start_time, span._end_time, span._status
        scope = span._instrumentation_scope
    except AttributeError:
        ctx, parent, name, kind = span.context, span.parent, span.name, span.kind
        start, end, status = span.start_time, span.end_time, span.status
        scope = span.instrumentation_scope
    try:  # the enum's plain value (``.value`` is a slow descriptor), the fields behind properties
        code, description = status._status_code._value_, status._description
        scope_name = scope._name if scope else ""
    except AttributeError:
        code, description = status.status_code.value, status.description
        scope_name = scope.name if scope else ""
    global _last_trace
    last = _last_trace
    if ctx.trace_id != last[0]:
        last = _last_trace = (ctx.trace_id, ctx.trace_id.to_bytes(16, "big").hex())
    return events_of(
        name,
        kind._value_ + 1,  # the SDK counts from INTERNAL = 0, OTLP from 1
        (start or 0) / 1e9, (end or 0) / 1e9,
        _STATUS[code], description or "",
        _attributes(span, clips),
        _exceptions(span, clips) if code == 2 else (),
        scope_name,
        last[1], ctx.span_id.to_bytes(8, "big").hex(),
        parent.span_id.to_bytes(8, "big").hex() if parent is not None else None,
    )


def _exceptions(span: Any, clips: Clips) -> list[tuple[str, dict[str, Any]]]:
    events = getattr(span, "_events", None)
    if events is None:
        events = span.events
    return [(e.name, {k: _plain(v, k, clips) for k, v in (e.attributes or {}).items()})
            for e in events if e.name == "exception"]
