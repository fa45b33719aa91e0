"""Talking to models behind OpenAI-compatible chat-completions endpoints.

``ChatClient`` is the async client (aiohttp, imported on first request): retries with backoff
that honour ``Retry-After``, a connection limit per endpoint, a per-request timeout, typed errors,
token usage and cost. ``ModelClients`` holds a run's clients, one per endpoint. ``tool`` describes a
Python function as a tool; ``run_tool_loop`` is the agent loop the ``openai:`` harness runs, and
``chat_agent`` the same loop as a Python agent. Prices: ``register_price``; cache: ``RequestCache``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._agent import ChatAgent, MaxStepsExceeded, chat_agent
    from ._cache import CacheScope, RequestCache, request_key
    from ._client import DEFAULT_BASE_URL, DEFAULT_MAX_CONNECTIONS, DEFAULT_TIMEOUT, ChatClient
    from ._errors import (
        MalformedResponseError,
        ModelConnectionError,
        ModelError,
        ModelTimeoutError,
        ProviderError,
        RateLimitedError,
    )
    from ._loop import DEFAULT_MAX_STEPS, LoopResult, LoopSettings, run_tool_loop
    from ._messages import user_message
    from ._pool import ModelClients
    from ._pricing import (
        PRICES_CHECKED,
        Price,
        cost_of,
        parse_pricing,
        price_for,
        register_price,
        token_cost,
    )
    from ._retry import RetryPolicy, retry_after_seconds
    from ._schema import SchemaError, schema_for
    from ._tools import Tool, ToolArgumentsError, ToolSet, as_tool, load_tools, tool
    from ._types import ChatResponse, Choice, ToolCall, Usage, json_schema_format, parse_completion

# Each public name's module, imported when the name is first used: a part that needs only the
# price table (``_pricing``) does not pay for the client, the tool loop and their imports.
_HOMES = {name: home for home, names in {
    "._agent": ("ChatAgent", "MaxStepsExceeded", "chat_agent"),
    "._cache": ("CacheScope", "RequestCache", "request_key"),
    "._client": ("DEFAULT_BASE_URL", "DEFAULT_MAX_CONNECTIONS", "DEFAULT_TIMEOUT", "ChatClient"),
    "._errors": ("MalformedResponseError", "ModelConnectionError", "ModelError", "ModelTimeoutError",
                 "ProviderError", "RateLimitedError"),
    "._loop": ("DEFAULT_MAX_STEPS", "LoopResult", "LoopSettings", "run_tool_loop"),
    "._messages": ("user_message",),
    "._pool": ("ModelClients",),
    "._pricing": ("PRICES_CHECKED", "Price", "cost_of", "parse_pricing", "price_for", "register_price",
                  "token_cost"),
    "._retry": ("RetryPolicy", "retry_after_seconds"),
    "._schema": ("SchemaError", "schema_for"),
    "._tools": ("Tool", "ToolArgumentsError", "ToolSet", "as_tool", "load_tools", "tool"),
    "._types": ("ChatResponse", "Choice", "ToolCall", "Usage", "json_schema_format", "parse_completion"),
}.items() for name in names}


__getattr__ = lazy_names(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TIMEOUT",
    "PRICES_CHECKED",
    "CacheScope",
    "ChatAgent",
    "ChatClient",
    "ChatResponse",
    "Choice",
    "LoopResult",
    "LoopSettings",
    "MalformedResponseError",
    "MaxStepsExceeded",
    "ModelClients",
    "ModelConnectionError",
    "ModelError",
    "ModelTimeoutError",
    "Price",
    "ProviderError",
    "RateLimitedError",
    "RequestCache",
    "RetryPolicy",
    "SchemaError",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolSet",
    "Usage",
    "as_tool",
    "chat_agent",
    "cost_of",
    "json_schema_format",
    "load_tools",
    "parse_completion",
    "parse_pricing",
    "price_for",
    "register_price",
    "request_key",
    "retry_after_seconds",
    "run_tool_loop",
    "schema_for",
    "token_cost",
    "tool",
    "user_message",
]
