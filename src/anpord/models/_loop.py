"""The tool-calling loop: ask the model, run the tools it calls, feed the results back, until it
answers or runs out of steps.

The loop reports what happens through ``emit(type, data)`` — ``tool.called``, ``tool.result`` and
one ``usage`` per model call — so the ``openai:`` harness and a Python agent built with
``chat_agent`` record the same events. Model errors (``ModelError``) propagate: what they mean for
a trial is the caller's decision. A tool's own failure, bad arguments and unknown tool names are
the model's to handle: each goes back to it as the tool's error text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..events import TOOL_CALLED, TOOL_RESULT, USAGE, to_jsonable
from ._cache import CacheScope
from ._client import ChatClient
from ._pricing import Price
from ._tools import ToolArgumentsError, ToolSet
from ._types import ChatResponse, ToolCall

__all__ = ["DEFAULT_MAX_STEPS", "LoopResult", "LoopSettings", "run_tool_loop"]

DEFAULT_MAX_STEPS = 10
Emit = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class LoopSettings:
    model: str
    system: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    tool_choice: Any = None
    response_format: Mapping[str, Any] | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    prices: Mapping[str, Price] = field(default_factory=dict)


@dataclass(frozen=True)
class LoopResult:
    status: str  # "completed" or "failed" (out of steps)
    message: str | None = None
    data: Any = None  # the answer parsed as JSON, when a JSON response_format was asked for
    error: str | None = None
    steps: int = 0


def _tool_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(to_jsonable(value), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _error_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _run_call(call: ToolCall, tools: ToolSet, emit: Emit) -> str:
    """Run one tool call, recording it; returns the text the model gets back."""
    tool = tools.get(call.name)
    parsed: Any
    try:
        parsed = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        parsed = call.arguments  # shown as the model wrote it
    emit(TOOL_CALLED, {"call_id": call.id, "name": call.name, "input": parsed})

    def failed(error: str) -> str:
        emit(
            TOOL_RESULT,
            {
                "call_id": call.id,
                "name": call.name,
                "output": None,
                "status": "failed",
                "error": error,
            },
        )
        return f"Error: {error}"

    if tool is None:
        known = ", ".join(tools.by_name) or "none"
        return failed(f"unknown tool {call.name!r}; the tools are: {known}")
    try:
        arguments = tool.parse(call.arguments)
        output = await tool.call(arguments)
    except ToolArgumentsError as exc:
        return failed(str(exc))
    except asyncio.CancelledError:
        failed("cancelled")
        raise
    except Exception as exc:  # noqa: BLE001 - a tool's failure is the model's to handle
        return failed(_error_line(exc))
    emit(
        TOOL_RESULT,
        {
            "call_id": call.id,
            "name": call.name,
            "output": to_jsonable(output),
            "status": "completed",
            "error": None,
        },
    )
    return _tool_text(output)


def _usage_data(response: ChatResponse, model: str, step: int) -> dict[str, Any]:
    u = response.usage
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cost": response.cost,
        "model": response.model or model,
        "cached": response.cached,
        "step": step,
    }


async def run_tool_loop(
    client: ChatClient,
    settings: LoopSettings,
    messages: list[dict[str, Any]],
    tools: ToolSet,
    emit: Emit,
    *,
    cache_scope: CacheScope | None = None,
) -> LoopResult:
    """Run one turn. ``messages`` is the conversation without the system prompt, this turn's user
    message last; the assistant and tool messages of the turn are appended to it."""
    head = [{"role": "system", "content": settings.system}] if settings.system else []
    for step in range(1, settings.max_steps + 1):
        response = await client.chat(
            head + messages,
            model=settings.model,
            tools=tools.specs or None,
            tool_choice=settings.tool_choice if tools.specs else None,
            temperature=settings.temperature,
            seed=settings.seed,
            max_tokens=settings.max_tokens,
            response_format=settings.response_format,
            extra_body=settings.extra_body,
            cache_scope=cache_scope,
            prices=settings.prices,
        )
        emit(USAGE, _usage_data(response, settings.model, step))
        choice = response.choice
        messages.append(choice.to_message())
        if not choice.tool_calls:
            text = choice.content if choice.content is not None else (choice.refusal or "")
            return LoopResult(
                "completed", text, _structured(text, settings.response_format), steps=step
            )
        for call in choice.tool_calls:
            content = await _run_call(call, tools, emit)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return LoopResult(
        "failed",
        error=f"the model was still calling tools after max_steps={settings.max_steps} model calls",
        steps=settings.max_steps,
    )


def _structured(text: str, response_format: Mapping[str, Any] | None) -> Any:
    if not response_format or response_format.get("type") not in ("json_schema", "json_object"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
