"""The Python agent API: the agent's side of a turn.

An agent is an async or sync callable taking a ``TurnContext`` and returning the assistant's
message (a string, or any structured value)::

    async def agent(turn: TurnContext) -> str:
        forecast = await turn.call_tool("get_weather", {"city": "Brooklyn"}, get_weather)
        return f"It is {forecast} in Brooklyn."

A sync agent gets a ``SyncTurnContext`` with the same methods, blocking instead of awaiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Sequence

from .events import TOOL_CALLED, TOOL_RESULT, USAGE, Event

__all__ = ["TurnContext", "SyncTurnContext", "TurnCancelled", "normalize_options"]


class TurnCancelled(Exception):
    """Raised inside a sync agent's context calls once its turn was cancelled."""


def normalize_options(options: Sequence[Any] | None) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for opt in options or ():
        if isinstance(opt, Mapping):
            if "id" not in opt:
                raise ValueError(f"an input option needs an 'id', got {dict(opt)!r}")
            out.append({"id": str(opt["id"]), "label": str(opt.get("label", opt["id"]))})
        else:
            out.append({"id": str(opt), "label": str(opt)})
    return out


_call_ids = itertools.count(1)


class _TurnEvents:
    """What both turn contexts share: recording events into the turn's stream."""

    session_id: str

    def _post(self, event: Event) -> None:
        """Deliver an event to the turn's stream (no checks)."""
        raise NotImplementedError

    def _send(self, event: Event) -> None:
        self._post(event)

    def emit(self, type: str, **data: Any) -> None:
        """Record a custom event (or any typed event) in this turn's stream."""
        data.setdefault("session_id", self.session_id)
        self._send(Event(type, data))

    def usage(
        self, input_tokens: int | None = None, output_tokens: int | None = None, cost: float | None = None
    ) -> None:
        self.emit(USAGE, input_tokens=input_tokens, output_tokens=output_tokens, cost=cost)

    def _tool_called(self, name: str, input: Any) -> str:
        call_id = f"call_{next(_call_ids)}"
        self.emit(TOOL_CALLED, call_id=call_id, name=name, input=input)
        return call_id

    def _tool_done(self, call_id: str, name: str, output: Any) -> None:
        self.emit(TOOL_RESULT, call_id=call_id, name=name, output=output, status="completed", error=None)

    def _tool_failed(self, call_id: str, name: str, error: str) -> None:
        # Posted even after a cancel: the call must not be left without a result.
        self._post(Event(TOOL_RESULT, {"session_id": self.session_id, "call_id": call_id, "name": name,
                                       "output": None, "status": "failed", "error": error}))


class TurnContext(_TurnEvents):
    """One turn of a Python agent (async API)."""

    def __init__(
        self,
        *,
        input: Any,
        messages: list[dict[str, Any]],
        session_id: str,
        model: str | None,
        workspace: Path | None,
        emit: Callable[[Event], None],
        request_input: Callable[..., Awaitable[Any]],
        mocks: Mapping[str, Any] | None = None,
        model_proxy: Any = None,
    ):
        self.input = input
        self.messages = messages
        self.session_id = session_id
        self.model = model
        self.workspace = workspace
        # The trial's mocks by name: ``.url`` (HTTP), ``.mcp_server`` (MCP), ``.path`` (CLI).
        self.mocks: Mapping[str, Any] = mocks or {}
        # The trial's model proxy (Variant(model_proxy=True)), else None: ``.base_url(provider)``
        # and ``.api_key(provider)`` for an SDK, ``.url``, ``.env`` for a program it starts.
        self.model_proxy: Any = model_proxy
        self._emit = emit
        self._request_input = request_input

    def _post(self, event: Event) -> None:
        self._emit(event)

    async def call_tool(self, name: str, input: Any, fn: Callable[[Any], Any]) -> Any:
        """Record a tool call, run ``fn(input)`` (sync or async), record its result.

        An exception is recorded as a failed result and re-raised."""
        call_id = self._tool_called(name, input)
        try:
            result = fn(input)
            if inspect.isawaitable(result):
                result = await result
        except asyncio.CancelledError:
            self._tool_failed(call_id, name, "cancelled")
            raise
        except Exception as exc:
            self._tool_failed(call_id, name, f"{type(exc).__name__}: {exc}")
            raise
        self._tool_done(call_id, name, result)
        return result

    async def request_input(
        self,
        prompt: str,
        options: Sequence[Any] | None = ("approve", "deny"),
        tool_name: str | None = None,
        input: Any = None,
        display: str | None = None,
    ) -> Any:
        """Park the session until the eval answers; returns the chosen option id (or value).
        ``display`` is how the request is shown to the person deciding (a short title such as
        ``"Delete notes.txt"``), when that differs from the prompt."""
        return await self._request_input(
            prompt=prompt, options=normalize_options(options), tool_name=tool_name, input=input,
            display=display,
        )


class SyncTurnContext(_TurnEvents):
    """The same API for a sync agent running in its own thread: calls block."""

    def __init__(
        self,
        inner: TurnContext,
        loop: asyncio.AbstractEventLoop,
        parked: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
    ):
        self._inner = inner
        self._loop = loop
        self._parked = parked or contextlib.nullcontext  # lends the thread's slot while waiting
        self.cancelled = False
        self.input = inner.input
        self.messages = inner.messages
        self.session_id = inner.session_id
        self.model = inner.model
        self.workspace = inner.workspace
        self.mocks = inner.mocks
        self.model_proxy = inner.model_proxy

    def _check(self) -> None:
        if self.cancelled:
            raise TurnCancelled("the turn was cancelled")

    def _post(self, event: Event) -> None:
        # The stream lives on the event loop; this runs in the agent's thread.
        self._loop.call_soon_threadsafe(self._inner._emit, event)

    def _send(self, event: Event) -> None:
        self._check()
        self._post(event)

    def call_tool(self, name: str, input: Any, fn: Callable[[Any], Any]) -> Any:
        self._check()
        call_id = self._tool_called(name, input)
        try:
            result = fn(input)
            if inspect.isawaitable(result):
                result = asyncio.run_coroutine_threadsafe(_awaited(result), self._loop).result()
        except Exception as exc:
            self._tool_failed(call_id, name, f"{type(exc).__name__}: {exc}")
            raise
        self._tool_done(call_id, name, result)
        return result

    def request_input(
        self,
        prompt: str,
        options: Sequence[Any] | None = ("approve", "deny"),
        tool_name: str | None = None,
        input: Any = None,
        display: str | None = None,
    ) -> Any:
        self._check()
        future = asyncio.run_coroutine_threadsafe(
            self._inner.request_input(prompt, options, tool_name, input, display), self._loop
        )
        try:
            with self._parked():
                return future.result()
        except BaseException:
            self.cancelled = True
            raise TurnCancelled("the turn was cancelled while waiting for input") from None


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value

