"""Spans → the events every harness speaks (DESIGN §5).

- a tool span (``gen_ai.operation.name`` ``execute_tool``; OpenInference ``TOOL``; Traceloop
  ``tool``) → ``tool.called`` + ``tool.result``;
- a model span (``chat``, ``text_completion``, ``generate_content``; OpenInference ``LLM``;
  Traceloop ``llm.request.type``) → ``model.called`` with its usage;
- any other span → ``span``.

Every event made here has ``source: "trace"`` and the span's ``span_id``, ``parent_span_id`` and
``trace_id``, so the view can nest them and a replay of the record needs nothing else. Current
GenAI attribute names are read first, then the deprecated and other conventions' names still
emitted widely (docs/traces.md lists them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..events import MODEL_CALLED, SPAN, TOOL_CALLED, TOOL_RESULT, Event
from ._spans import Span

try:  # a tool's arguments and result, parsed at about a fifth of json's cost
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency
    _loads = None  # type: ignore[assignment]

__all__ = ["MODEL_CALLED", "SPAN", "events_of", "span_events", "TOOL_OPERATIONS", "MODEL_OPERATIONS",
           "JSON_ATTRIBUTES", "is_json_text"]

SOURCE = "trace"

TOOL_OPERATIONS = frozenset({"execute_tool"})
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
# OpenInference's span kinds, as GenAI operation names.
_OPENINFERENCE = {"TOOL": "execute_tool", "LLM": "chat", "AGENT": "invoke_agent",
                  "EMBEDDING": "embeddings"}
_TRACELOOP = {"chat": "chat", "completion": "text_completion"}

# Each field, by the names it goes by: the current GenAI name first.
_TOOL_NAME = ("gen_ai.tool.name", "tool.name", "traceloop.entity.name")
_TOOL_CALL_ID = ("gen_ai.tool.call.id", "tool_call.id", "tool.call.id")
_TOOL_INPUT = ("gen_ai.tool.call.arguments", "input.value", "tool.arguments", "traceloop.entity.input")
_TOOL_OUTPUT = ("gen_ai.tool.call.result", "output.value", "tool.result", "traceloop.entity.output")
_PROVIDER = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
_MODEL = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "llm.response.model",
          "llm.request.model")
_INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                 "llm.usage.prompt_tokens")
_OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                  "llm.token_count.completion", "llm.usage.completion_tokens")
_CACHED_TOKENS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                  "llm.token_count.prompt_details.cache_read")
_RESPONSE_ID = ("gen_ai.response.id",)
# The attributes whose JSON text the mapping parses: the receivers keep them whole up to
# MAX_JSON_STRING (where other strings are cut at MAX_STRING), so they still parse.
JSON_ATTRIBUTES = frozenset(_TOOL_INPUT + _TOOL_OUTPUT)


# Every name any field goes by → (field, rank): a span's attributes are read in one pass, and
# where two names of one field are both set, the lower rank (the current name first) wins.
_FIELDS: dict[str, tuple[str, ...]] = {
    "op": ("gen_ai.operation.name",), "openinference": ("openinference.span.kind",),
    "traceloop": ("traceloop.span.kind",), "request_type": ("llm.request.type",),
    "tool": _TOOL_NAME, "call_id": _TOOL_CALL_ID, "input": _TOOL_INPUT, "output": _TOOL_OUTPUT,
    "provider": _PROVIDER, "model": _MODEL, "input_tokens": _INPUT_TOKENS,
    "output_tokens": _OUTPUT_TOKENS, "cached": _CACHED_TOKENS, "response_id": _RESPONSE_ID,
}
_ALIASES: dict[str, tuple[str, int]] = {
    name: (field, rank) for field, names in _FIELDS.items() for rank, name in enumerate(names)
}
_NO_FIELDS: dict[str, Any] = {}  # a span without attributes: read, never written


def _fields(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The fields the mapping reads, by ``_FIELDS`` key, from one pass over the attributes (a
    value of ``None`` or ``""`` counts as absent)."""
    found: dict[str, Any] = {}
    aliases = _ALIASES
    for key, value in attrs.items():
        slot = aliases.get(key)
        if slot is None or value is None or value == "":
            continue
        field = slot[0]
        if field in found:  # two names of one field (rare): the first listed that is set wins
            found[field] = next(v for v in (attrs.get(n) for n in _FIELDS[field]) if v is not None and v != "")
        else:
            found[field] = value
    return found


def _operation(fields: Mapping[str, Any], name: str) -> str | None:
    op = fields.get("op")
    if isinstance(op, str):
        return op
    kind = fields.get("openinference")
    if isinstance(kind, str) and kind.upper() in _OPENINFERENCE:
        return _OPENINFERENCE[kind.upper()]
    if fields.get("traceloop") == "tool":
        return "execute_tool"
    req = fields.get("request_type")
    if isinstance(req, str) and req in _TRACELOOP:
        return _TRACELOOP[req]
    # The conventions name a span "{operation} {target}": "execute_tool get_weather", "chat gpt-4o".
    head = name.split(" ", 1)[0]
    if head in TOOL_OPERATIONS or head in MODEL_OPERATIONS:
        return head
    return None


def operation(span: Span) -> str | None:
    """The GenAI operation a span performs, whichever convention named it."""
    return _operation(_fields(span.attributes), span.name)


def _parsed(value: Any) -> Any:
    """A JSON text as its value (tool arguments and results mostly are); anything else as is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in '{["0123456789-tfn':
        return value
    if _loads is not None:
        try:
            return _loads(text)
        except ValueError:  # orjson.JSONDecodeError; NaN, a 65-bit integer: json reads those
            pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return value


def is_json_text(value: str) -> bool:
    """Whether the mapping reads ``value`` as JSON (``_parsed``)."""
    return _parsed(value) is not value


def _number(value: Any) -> int | float | None:
    kind = type(value)
    if kind is int or kind is float:
        return value
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _error(status_message: str, exceptions: Sequence[tuple[str, Mapping[str, Any]]],
           attrs: Mapping[str, Any]) -> str:
    if status_message:
        return status_message
    for name, exc in exceptions:
        if name == "exception":
            kind, message = exc.get("exception.type"), exc.get("exception.message")
            return ": ".join(str(p) for p in (kind, message) if p) or "exception"
    return str(attrs.get("error.type") or "the span's status is error")


_pricing: Any = None  # anpord.models._pricing, imported on the first priced span


def _cost(model: Any, input_tokens: Any, output_tokens: Any, cached: Any) -> float | None:
    """The call's price from anpord's table (docs/model-agents.md), when the model is in it."""
    global _pricing
    if not isinstance(model, str) or input_tokens is None or output_tokens is None:
        return None
    if _pricing is None:  # once: an import statement costs a microsecond each time it runs
        from ..models import _pricing as pricing

        _pricing = pricing
    if _pricing.price_for(model) is None:  # looked up first: many spans' models have no listed price
        return None
    return _pricing.token_cost(model, input_tokens, output_tokens, _number(cached))  # type: ignore[no-any-return]


def span_events(span: Span) -> list[Event]:
    """The events one span stands for, oldest first."""
    return events_of(span.name, span.kind, span.start, span.end, span.status, span.status_message,
                     span.attributes, span.events, span.scope, span.trace_id, span.span_id,
                     span.parent_span_id)


def events_of(name: str, kind: int, start: float, end: float, status: str, status_message: str,
              attrs: dict[str, Any], exceptions: Sequence[tuple[str, Mapping[str, Any]]], scope: str,
              trace_id: str, span_id: str, parent: str | None) -> list[Event]:
    """``span_events`` of a span given field by field, as the SDK's spans are read without an
    intermediate ``Span`` (``_inprocess``). Every span of a traced trial comes through here: its
    attributes are read in one pass, each event's dict built in one literal. A ``span`` event holds
    the span's own attributes dict, not a copy: nothing writes to it once the span has ended (the
    SDK marks it immutable; a decoded span's is the decoder's)."""
    fields = _fields(attrs) if attrs else _NO_FIELDS
    op = _operation(fields, name)
    failed = status == "error"
    if op in TOOL_OPERATIONS:
        tool = fields.get("tool")
        if tool is None:
            tool = name[len("execute_tool "):] if name.startswith("execute_tool ") else name
        tool = str(tool)
        call_id = str(fields.get("call_id") or span_id)
        called = {"call_id": call_id, "name": tool, "input": _parsed(fields.get("input")),
                  "start": start, "source": SOURCE, "span_id": span_id, "parent_span_id": parent,
                  "trace_id": trace_id}
        result = {"call_id": call_id, "name": tool, "output": _parsed(fields.get("output")),
                  "status": "failed" if failed else "completed",
                  "error": _error(status_message, exceptions, attrs) if failed else None,
                  "end": end, "source": SOURCE, "span_id": span_id, "parent_span_id": parent,
                  "trace_id": trace_id}
        return [Event(TOOL_CALLED, called, start or end), Event(TOOL_RESULT, result, end)]
    if op in MODEL_OPERATIONS:
        model = fields.get("model")
        input_tokens, output_tokens = _number(fields.get("input_tokens")), _number(fields.get("output_tokens"))
        data: dict[str, Any] = {
            "name": name, "operation": op, "provider": fields.get("provider"),
            "model": model, "input_tokens": input_tokens, "output_tokens": output_tokens,
            "cost": _cost(model, input_tokens, output_tokens, fields.get("cached")),
            "response_id": fields.get("response_id"),
            "latency": round(end - start, 6) if end > start else 0.0,
            "status": "failed" if failed else "completed",
            "start": start, "end": end, "source": SOURCE, "span_id": span_id,
            "parent_span_id": parent, "trace_id": trace_id,
        }
        if failed:
            data["error"] = _error(status_message, exceptions, attrs)
        return [Event(MODEL_CALLED, data, end)]
    data = {"name": name, "kind": kind, "start": start, "end": end,
            "status": status, "attributes": attrs, "source": SOURCE, "span_id": span_id,
            "parent_span_id": parent, "trace_id": trace_id}
    if op is not None:
        data["operation"] = op
    if failed:
        data["error"] = _error(status_message, exceptions, attrs)
    if scope:
        data["scope"] = scope
    return [Event(SPAN, data, end)]
