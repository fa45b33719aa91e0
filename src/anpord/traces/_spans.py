"""One span as the receiver keeps it, whatever carried it (OTLP protobuf, OTLP JSON, or the
OpenTelemetry SDK in this process), and the attribute values it may hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Span", "TraceInputError", "MAX_DEPTH", "MAX_ATTRIBUTES", "TRIAL_ATTRIBUTE"]

# The resource attribute naming the trial a span belongs to (set through OTEL_RESOURCE_ATTRIBUTES).
TRIAL_ATTRIBUTE = "anpord.trial.id"
# Nesting of array/kvlist attribute values beyond this is refused as malformed: nothing real nests
# that deep, and a crafted payload could otherwise make the decoder recurse without bound.
MAX_DEPTH = 16
# Attributes kept per span (the SDK's own default limit is 128).
MAX_ATTRIBUTES = 256
# Characters kept of one string attribute value.
MAX_STRING = 64 * 1024


class TraceInputError(ValueError):
    """An export request that cannot be read (the exporter gets a 400 saying why)."""


@dataclass(slots=True)
class Span:
    trace_id: str  # lowercase hex, as OTLP/JSON writes it
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int = 0  # the OTLP SpanKind number (1 internal, 2 server, 3 client, ...)
    start: float = 0.0  # seconds since the epoch
    end: float = 0.0
    status: str = "unset"  # unset | ok | error
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    # Span events that say why it failed: (name, attributes), e.g. ("exception", {...}).
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    scope: str = ""  # the instrumentation scope (library) that made it


def clip_string(value: str) -> str:
    return value if len(value) <= MAX_STRING else value[:MAX_STRING] + f"… [{len(value) - MAX_STRING} more]"


def limit_attributes(attrs: dict[str, Any]) -> dict[str, Any]:
    if len(attrs) <= MAX_ATTRIBUTES:
        return attrs
    return dict(list(attrs.items())[:MAX_ATTRIBUTES])
