"""One span as the receiver keeps it, whatever carried it (OTLP protobuf, OTLP JSON, or the
OpenTelemetry SDK in this process), and the attribute values it may hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Span", "TraceInputError", "Clips", "MAX_DEPTH", "MAX_ATTRIBUTES", "MAX_ARRAY", "MAX_STRING",
           "MAX_JSON_STRING", "TRIAL_ATTRIBUTE"]

# The resource attribute naming the trial a span belongs to (set through OTEL_RESOURCE_ATTRIBUTES).
TRIAL_ATTRIBUTE = "anpord.trial.id"
# Nesting of array/kvlist attribute values beyond this is refused as malformed: nothing real nests
# that deep, and a crafted payload could otherwise make the decoder recurse without bound.
MAX_DEPTH = 16
# Attributes kept per span, and keys per map value (the SDK's own default limit is 128).
MAX_ATTRIBUTES = 256
# Elements kept of one array value: one span must not hold millions of them.
MAX_ARRAY = 1024
# Characters kept of one string attribute value.
MAX_STRING = 64 * 1024
# Characters kept of a JSON text in an attribute the mapping parses (a tool's arguments or
# result): whole up to this, so a large file's content in them still reads as JSON.
MAX_JSON_STRING = 1 << 20


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
    # Span events that say why it failed: (name, attributes), e.g. ("exception", {...}); read
    # for a failed span only, the one time the mapping looks at them.
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    scope: str = ""  # the instrumentation scope (library) that made it
    clipped: str = ""  # the first attribute a limit cut (the trial's log names it), else ""


class Clips:
    """What reading one span's values cut to the limits: the first attribute cut, for the log."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first = ""

    def cut(self, key: str) -> None:
        if not self.first:
            self.first = key or "?"


def clip_string(value: str, limit: int = MAX_STRING) -> str:
    return value if len(value) <= limit else value[:limit] + f"… [{len(value) - limit} more]"


def clip_attribute(key: str, value: str, clips: Clips, json_text: Callable[[str], bool] | None = None) -> str:
    """A string value past ``MAX_STRING`` (callers test the length first: most are short). One
    that ``json_text`` says is JSON the mapping parses is kept whole up to ``MAX_JSON_STRING``;
    cut, a JSON text is no longer one, so anything else keeps ``MAX_STRING``."""
    if json_text is not None and len(value) <= MAX_JSON_STRING and json_text(value):
        return value
    clips.cut(key)
    return clip_string(value)


def limit_attributes(attrs: dict[str, Any], clips: Clips | None = None) -> dict[str, Any]:
    if len(attrs) <= MAX_ATTRIBUTES:
        return attrs
    if clips is not None:
        clips.cut(list(attrs)[MAX_ATTRIBUTES])
    return dict(list(attrs.items())[:MAX_ATTRIBUTES])
