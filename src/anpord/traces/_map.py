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
from collections.abc import Mapping
from typing import Any

from ..events import MODEL_CALLED, SPAN, TOOL_CALLED, TOOL_RESULT, Event
from ._spans import Span

__all__ = ["MODEL_CALLED", "SPAN", "span_events", "TOOL_OPERATIONS", "MODEL_OPERATIONS"]

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


def _first(attrs: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    value = attrs.get(names[0])  # the current name: what most spans carry
    if value is not None and value != "":
        return value
    for name in names[1:]:
        value = attrs.get(name)
        if value is not None and value != "":
            return value
    return None


def operation(span: Span) -> str | None:
    """The GenAI operation a span performs, whichever convention named it."""
    attrs = span.attributes
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str) and op:
        return op
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind.upper() in _OPENINFERENCE:
        return _OPENINFERENCE[kind.upper()]
    if attrs.get("traceloop.span.kind") == "tool":
        return "execute_tool"
    req = attrs.get("llm.request.type")
    if isinstance(req, str) and req in _TRACELOOP:
        return _TRACELOOP[req]
    # The conventions name a span "{operation} {target}": "execute_tool get_weather", "chat gpt-4o".
    head = span.name.split(" ", 1)[0]
    if head in TOOL_OPERATIONS or head in MODEL_OPERATIONS:
        return head
    return None


def _parsed(value: Any) -> Any:
    """A JSON text as its value (tool arguments and results mostly are); anything else as is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in '{["0123456789-tfn':
        return value
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return value


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


def _error(span: Span) -> str:
    if span.status_message:
        return span.status_message
    for name, attrs in span.events:
        if name == "exception":
            kind, message = attrs.get("exception.type"), attrs.get("exception.message")
            return ": ".join(str(p) for p in (kind, message) if p) or "exception"
    return str(span.attributes.get("error.type") or "the span's status is error")


def _cost(model: Any, input_tokens: Any, output_tokens: Any, cached_names: tuple[str, ...],
          attrs: Mapping[str, Any]) -> float | None:
    """The call's price from anpord's table (docs/model-agents.md), when the model is in it."""
    if not isinstance(model, str) or input_tokens is None or output_tokens is None:
        return None
    from ..models._pricing import token_cost  # imported on the first priced span only

    return token_cost(model, input_tokens, output_tokens, _number(_first(attrs, cached_names)))


def span_events(span: Span) -> list[Event]:
    """The events one span stands for, oldest first. Every span of a traced trial comes through
    here: its dicts are built in one literal each, and a field's names tried only past the first.
    A ``span`` event holds the span's own attributes dict, not a copy: nothing writes to it once
    the span has ended (the SDK marks it immutable; a decoded span's is the decoder's)."""
    op = operation(span)
    attrs = span.attributes
    failed = span.status == "error"
    start, end = span.start, span.end
    if op in TOOL_OPERATIONS:
        name = _first(attrs, _TOOL_NAME)
        if name is None:
            name = span.name[len("execute_tool "):] if span.name.startswith("execute_tool ") else span.name
        name = str(name)
        call_id = str(_first(attrs, _TOOL_CALL_ID) or span.span_id)
        span_id, parent, trace_id = span.span_id, span.parent_span_id, span.trace_id
        called = {"call_id": call_id, "name": name, "input": _parsed(_first(attrs, _TOOL_INPUT)),
                  "start": start, "source": SOURCE, "span_id": span_id, "parent_span_id": parent,
                  "trace_id": trace_id}
        result = {"call_id": call_id, "name": name, "output": _parsed(_first(attrs, _TOOL_OUTPUT)),
                  "status": "failed" if failed else "completed", "error": _error(span) if failed else None,
                  "end": end, "source": SOURCE, "span_id": span_id, "parent_span_id": parent,
                  "trace_id": trace_id}
        return [Event(TOOL_CALLED, called, start or end), Event(TOOL_RESULT, result, end)]
    if op in MODEL_OPERATIONS:
        model = _first(attrs, _MODEL)
        input_tokens, output_tokens = _number(_first(attrs, _INPUT_TOKENS)), _number(_first(attrs, _OUTPUT_TOKENS))
        data: dict[str, Any] = {
            "name": span.name, "operation": op, "provider": _first(attrs, _PROVIDER),
            "model": model, "input_tokens": input_tokens, "output_tokens": output_tokens,
            "cost": _cost(model, input_tokens, output_tokens, _CACHED_TOKENS, attrs),
            "response_id": _first(attrs, _RESPONSE_ID),
            "latency": round(end - start, 6) if end > start else 0.0,
            "status": "failed" if failed else "completed",
            "start": start, "end": end, "source": SOURCE, "span_id": span.span_id,
            "parent_span_id": span.parent_span_id, "trace_id": span.trace_id,
        }
        if failed:
            data["error"] = _error(span)
        return [Event(MODEL_CALLED, data, end)]
    data = {"name": span.name, "kind": span.kind, "start": start, "end": end,
            "status": span.status, "attributes": attrs, "source": SOURCE, "span_id": span.span_id,
            "parent_span_id": span.parent_span_id, "trace_id": span.trace_id}
    if op is not None:
        data["operation"] = op
    if failed:
        data["error"] = _error(span)
    if span.scope:
        data["scope"] = span.scope
    return [Event(SPAN, data, end)]
