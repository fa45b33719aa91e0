"""``chat_agent``: the ``openai:`` harness's tool loop as a Python agent, to compose with your own.

    # agents/support.py
    from anpord.models import chat_agent
    from agents.tools import get_weather

    agent = chat_agent(model="gpt-4.1-mini", tools=[get_weather], system="You are terse.")

``python:agents.support:agent`` then runs it under the Python harness; or call it from your own
agent function (``return await agent(turn)``) after doing your own work. Its HTTP clients are
shared by every trial and closed by the harness's ``teardown`` hook (or when the loop ends)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ._client import DEFAULT_BASE_URL, DEFAULT_MAX_CONNECTIONS, DEFAULT_TIMEOUT
from ._loop import DEFAULT_MAX_STEPS, LoopSettings, run_tool_loop
from ._messages import user_message
from ._pool import ModelClients
from ._pricing import parse_pricing
from ._retry import RetryPolicy
from ._tools import ToolSet

__all__ = ["ChatAgent", "MaxStepsExceeded", "chat_agent"]


class MaxStepsExceeded(RuntimeError):
    """The model kept calling tools for max_steps model calls without answering."""


class ChatAgent:
    """An async Python agent (``agent(turn)``) running the chat-completions tool loop."""

    def __init__(
        self,
        *,
        model: str | None = None,
        tools: Iterable[Any] = (),
        system: str | None = None,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_steps: int = DEFAULT_MAX_STEPS,
        temperature: float | None = None,
        seed: int | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        pricing: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        retry: RetryPolicy | None = None,
    ):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.model = model
        self.tools = tools if isinstance(tools, ToolSet) else ToolSet(tools)
        self.system = system
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.max_steps = max_steps
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.response_format = response_format
        self.pricing = pricing
        self.timeout = timeout
        self.max_connections = max_connections
        self.retry = retry
        self.clients = ModelClients()

    async def setup(self) -> None:
        pass  # clients are made on first use

    async def teardown(self) -> None:
        await self.clients.close()

    async def __call__(self, turn: Any) -> Any:
        model = self.model or turn.model
        if not model:
            raise ValueError(
                "chat_agent needs a model: chat_agent(model=...) or the variant's model="
            )
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        client = self.clients.get(
            base_url,
            api_key_env=self.api_key_env,
            timeout=self.timeout,
            max_connections=self.max_connections,
            retry=self.retry,
        )
        settings = LoopSettings(
            model=model,
            system=self.system,
            max_steps=self.max_steps,
            temperature=self.temperature,
            seed=self.seed,
            max_tokens=self.max_tokens,
            response_format=self.response_format,
            prices=parse_pricing(self.pricing, model) if self.pricing else {},
        )
        history = list(turn.messages)
        messages = [dict(m) for m in history[:-1]] + [user_message(turn.input)]
        result = await run_tool_loop(
            client, settings, messages, self.tools, lambda kind, data: turn.emit(kind, **data)
        )
        if result.status != "completed":
            raise MaxStepsExceeded(result.error)
        return result.data if result.data is not None else result.message


def chat_agent(**settings: Any) -> ChatAgent:
    """A Python agent that runs the chat-completions tool loop. Takes ``model``, ``tools``
    (functions or ``Tool``s), ``system``, ``base_url`` (else ``$OPENAI_BASE_URL``, else OpenAI),
    ``api_key_env``, ``max_steps``, ``temperature``, ``seed``, ``max_tokens``,
    ``response_format``, ``pricing``, ``timeout``, ``max_connections``, ``retry``."""
    return ChatAgent(**settings)
