"""Traces as a transcript source: OpenTelemetry spans from the agent become the trial's events
(``Variant(traces="otlp")``; docs/traces.md)."""

from ._map import MODEL_CALLED, SPAN, span_events
from ._service import TraceService
from ._spans import TRIAL_ATTRIBUTE, Span

__all__ = ["MODEL_CALLED", "SPAN", "Span", "TRIAL_ATTRIBUTE", "TraceService", "span_events"]
