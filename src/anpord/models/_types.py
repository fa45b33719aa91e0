"""A chat completion as plain data, parsed strictly from the wire format.

Parsing is where a malformed answer is caught: anything that is not a chat completion raises
``MalformedResponseError`` naming what is missing, so the agent loop only ever sees valid data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import MalformedResponseError

__all__ = ["ChatResponse", "Choice", "ToolCall", "Usage", "json_schema_format", "parse_completion"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON text the model wrote: it may not be valid JSON

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Choice:
    index: int
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    refusal: str | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_message() for c in self.tool_calls]
        return msg


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ChatResponse:
    id: str | None
    model: str | None
    choices: tuple[Choice, ...]
    usage: Usage
    cost: float | None = None  # None when the model's price is unknown, never a made-up 0
    cached: bool = False  # replayed from the request cache
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def choice(self) -> Choice:
        return self.choices[0]

    @property
    def text(self) -> str:
        return self.choice.content or ""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.choice.tool_calls

    @property
    def finish_reason(self) -> str | None:
        return self.choice.finish_reason

    def json(self) -> Any:
        """The first choice's content parsed as JSON (a structured-output call)."""
        try:
            return json.loads(self.text)
        except ValueError as exc:
            raise MalformedResponseError(
                f"the model's answer is not JSON: {exc}: {self.text[:200]!r}"
            ) from None


def json_schema_format(
    schema: Mapping[str, Any], name: str = "answer", *, strict: bool = True
) -> dict[str, Any]:
    """A ``response_format`` asking for JSON that follows ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": dict(schema), "strict": strict},
    }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    return Usage(_int(raw.get("prompt_tokens")), _int(raw.get("completion_tokens")), cached)


def _tool_calls(raw: Any, where: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise MalformedResponseError(f"{where}.tool_calls is not a list")
    out = []
    for i, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise MalformedResponseError(f"{where}.tool_calls[{i}] has no function name")
        args = fn.get("arguments")
        if args is None:
            args = ""
        elif not isinstance(args, str):  # some servers send an object: keep the model's intent
            args = json.dumps(args)
        call_id = call.get("id")
        out.append(
            ToolCall(
                call_id if isinstance(call_id, str) and call_id else f"call_{i}", fn["name"], args
            )
        )
    return tuple(out)


def parse_completion(raw: Any) -> ChatResponse:
    """A decoded chat-completions body → ``ChatResponse``; raises MalformedResponseError."""
    if not isinstance(raw, Mapping):
        raise MalformedResponseError(f"the response is not a JSON object: {str(raw)[:200]!r}")
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponseError("the response has no choices")
    parsed = []
    for i, ch in enumerate(choices):
        msg = ch.get("message") if isinstance(ch, Mapping) else None
        if not isinstance(msg, Mapping):
            raise MalformedResponseError(f"choices[{i}] has no message")
        content = msg.get("content")
        if content is not None and not isinstance(content, str):
            raise MalformedResponseError(f"choices[{i}].message.content is not a string")
        refusal = msg.get("refusal")
        finish = ch.get("finish_reason")
        index = ch.get("index")
        parsed.append(
            Choice(
                index=index if isinstance(index, int) else i,
                content=content,
                tool_calls=_tool_calls(msg.get("tool_calls"), f"choices[{i}].message"),
                finish_reason=finish if isinstance(finish, str) else None,
                refusal=refusal if isinstance(refusal, str) else None,
            )
        )
    rid, model = raw.get("id"), raw.get("model")
    return ChatResponse(
        id=rid if isinstance(rid, str) else None,
        model=model if isinstance(model, str) else None,
        choices=tuple(parsed),
        usage=_usage(raw.get("usage")),
        raw=raw,
    )
