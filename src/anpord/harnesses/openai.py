"""The model harness: ``"openai:<model>"`` — a chat-completions tool loop against any
OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server, ...).

The model is the variant's ``model=`` when set, else the spec's suffix. Settings come from
``Variant(options={...})`` (see ``OPTIONS``; docs/model-agents.md). Each turn sends the session's
conversation (system prompt first), runs the Python tools the model calls, feeds their results
back, and stops at a final answer — or fails the turn after ``max_steps`` model calls. A model
endpoint that cannot answer (unreachable, 5xx or 429 after the retries, a malformed body, a
timeout) raises ``HarnessStartError``: the trial is ``void``, since nothing about the agent was
measured. The run's HTTP clients (one per endpoint, shared by all trials) are closed by
``teardown``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import MESSAGE_COMPLETED, Event
from ._protocol import (
    Emit,
    HarnessContext,
    HarnessSpecError,
    HarnessStartError,
    TurnOutcome,
    TurnRequest,
)

if TYPE_CHECKING:
    from ..models import CacheScope, ChatClient, LoopSettings, ModelClients, ToolSet

__all__ = ["OPTIONS", "OpenAIHarness", "OpenAISession", "resolve"]

# The option keys this harness reads from Variant(options=...), with what each is.
OPTIONS = {
    "base_url": "endpoint base URL (else OPENAI_BASE_URL from the variant's env=, then the environment)",
    "api_key_env": "environment variable holding the API key (default OPENAI_API_KEY)",
    "system": "system prompt",
    "tools": "import paths 'pkg.module:function', or one 'pkg.module:TOOLS' list",
    "max_steps": "model calls per turn before the turn fails (default 10)",
    "temperature": "sampling temperature",
    "seed": "sampling seed",
    "max_tokens": "cap on output tokens per model call",
    "tool_choice": "'auto', 'required', 'none' or a specific function",
    "response_format": "a response_format (e.g. JSON schema): the answer becomes the turn's data",
    "pricing": "prices per million tokens: {'input': $, 'output': $} or {model: {...}}",
    "timeout": "seconds per model request (default 120)",
    "max_connections": "connections to the endpoint shared by all trials (default: the run's concurrency)",
    "max_attempts": "attempts per model request, retries included (default 4)",
    "retry_delay": "first backoff in seconds, doubled per retry (default 0.5)",
    "extra_body": "more request fields, sent as they are",
}


@dataclass
class _Resolved:
    """A variant's settings, resolved once per run."""

    settings: LoopSettings
    tools: ToolSet
    client: ChatClient


def _number(
    options: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, positive: bool = False
) -> Any:
    value: Any = options.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, kind) or (positive and float(value) <= 0):  # type: ignore[arg-type]
        want = "a positive " if positive else "a "
        want += "integer" if kind is int else "number"
        raise ValueError(f"options[{key!r}] must be {want}, got {value!r}")
    return value


class OpenAIHarness:
    needs_sandbox = False

    def __init__(self, spec: str, project_dir: Path | None = None):
        self.spec = spec
        self.default_model = spec[len("openai:") :].strip() or None
        self.project_dir = project_dir
        self._clients: ModelClients | None = None
        self._resolved: dict[str, _Resolved] = {}

    def __repr__(self) -> str:
        return f"OpenAIHarness({self.spec!r})"

    @property
    def clients(self) -> ModelClients:
        if self._clients is None:
            from ..models import ModelClients

            self._clients = ModelClients()
        return self._clients

    async def setup(self) -> None:
        _ = self.clients  # clients open their connections on first use

    async def teardown(self) -> None:
        if self._clients is not None:
            await self._clients.close()
        self._resolved.clear()

    async def prepare_sandbox(self, ctx: HarnessContext) -> None:
        pass  # the model loop needs nothing in a trial's sandbox

    def _resolve(self, ctx: HarnessContext) -> _Resolved:
        variant = ctx.variant
        # Each case gets its own (equal) Variant object: key on what the settings are made of.
        key = repr(
            (
                variant.model,
                sorted(variant.options.items()),
                sorted(variant.env.items()),
                ctx.cache_dir,
                ctx.max_concurrency,
            )
        )
        resolved = self._resolved.get(key)
        if resolved is None:
            try:
                resolved = self._resolved[key] = self._build(ctx)
            except ValueError as exc:
                raise HarnessStartError(f"{self.spec} (variant {variant.label}): {exc}") from None
        return resolved

    def _build(self, ctx: HarnessContext) -> _Resolved:
        from ..models import (
            DEFAULT_BASE_URL,
            LoopSettings,
            RetryPolicy,
            ToolSet,
            load_tools,
            parse_pricing,
        )

        variant = ctx.variant
        options = dict(variant.options)
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ValueError(
                f"unknown option {', '.join(map(repr, unknown))}; the options are: {', '.join(OPTIONS)}"
            )
        model = variant.model or self.default_model
        if not model:
            raise ValueError("no model: write 'openai:<model>' or give the variant model=")
        env = dict(variant.env)
        base_url = (
            options.get("base_url")
            or env.get("OPENAI_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_BASE_URL
        )
        if not isinstance(base_url, str):
            raise ValueError(f"options['base_url'] must be a URL string, got {base_url!r}")
        key_env = options.get("api_key_env", "OPENAI_API_KEY")
        if not isinstance(key_env, str) or not key_env:
            raise ValueError(
                f"options['api_key_env'] must be an environment variable name, got {key_env!r}"
            )
        system = options.get("system")
        if system is not None and not isinstance(system, str):
            raise ValueError(f"options['system'] must be a string, got {type(system).__name__}")
        max_steps = _number(options, "max_steps", int, positive=True) or 10
        paths = options.get("tools")
        tools = load_tools(paths, self.project_dir) if paths else ToolSet()
        for key in ("response_format", "extra_body"):
            if options.get(key) is not None and not isinstance(options[key], Mapping):
                raise ValueError(f"options[{key!r}] must be a dict, got {options[key]!r}")
        prices = parse_pricing(options["pricing"], model) if options.get("pricing") else {}
        settings = LoopSettings(
            model=model,
            system=system,
            max_steps=max_steps,
            temperature=_number(options, "temperature", (int, float)),
            seed=_number(options, "seed", int),
            max_tokens=_number(options, "max_tokens", int, positive=True),
            tool_choice=options.get("tool_choice"),
            response_format=options.get("response_format"),
            extra_body=dict(options.get("extra_body") or {}),
            prices=prices,
        )
        retry = RetryPolicy(
            max_attempts=_number(options, "max_attempts", int, positive=True) or 4,
            base_delay=float(_number(options, "retry_delay", (int, float)) or 0.5),
        )
        client = self.clients.get(
            base_url,
            api_key_env=key_env,
            env=env,
            timeout=float(_number(options, "timeout", (int, float), positive=True) or 120.0),
            max_connections=_number(options, "max_connections", int, positive=True)
            or max(1, ctx.max_concurrency),
            retry=retry,
            cache_dir=ctx.cache_dir,
        )
        return _Resolved(settings, tools, client)

    async def open_session(self, ctx: HarnessContext, session_id: str) -> OpenAISession:
        resolved = self._resolve(ctx)
        proxy = ctx.extra.get("model_proxy")
        if proxy is None:
            return OpenAISession(ctx, session_id, resolved)
        # Variant(model_proxy=True): this trial's calls go to its own proxy address, which
        # forwards them, over the variant's connection pool (the proxy server is the run's one).
        client = resolved.client.via(proxy.base_url("openai"), proxy.api_key("openai"))
        return OpenAISession(ctx, session_id, _Resolved(resolved.settings, resolved.tools, client))


def _cache_scope(ctx: HarnessContext) -> CacheScope | None:
    """One per trial, named by its index: repeated trials of a case are cached apart."""
    if ctx.cache_dir is None:
        return None
    scope = ctx.extra.get("model_cache_scope")
    if scope is None:
        from ..models import CacheScope

        scope = ctx.extra["model_cache_scope"] = CacheScope(ctx.trial_index)
    return scope


class OpenAISession:
    def __init__(self, ctx: HarnessContext, session_id: str, resolved: _Resolved):
        self.ctx = ctx
        self.session_id = session_id
        self.resolved = resolved
        # The conversation as the model sees it (tool calls and results included), no system prompt.
        self.messages: list[dict[str, Any]] = []
        self._scope: asyncio.Timeout | None = None

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        from ..models import ModelError, run_tool_loop, user_message

        if request.input is None:
            return TurnOutcome(
                "failed",
                error="the openai harness never asks for input, so there is nothing to answer",
            )
        self.messages.append(user_message(request.input))
        mark = len(self.messages)
        r = self.resolved
        # The turn runs in the caller's task (no task of its own per turn); cancel() ends it
        # through this scope, which turns that one cancellation into TimeoutError right here
        # while a cancellation from outside (the trial's deadline) still propagates.
        self._scope = scope = asyncio.timeout(None)
        try:
            async with scope:
                result = await run_tool_loop(
                    r.client,
                    r.settings,
                    self.messages,
                    r.tools,
                    lambda kind, data: emit(Event(kind, data)),
                    cache_scope=_cache_scope(self.ctx),
                )
        except TimeoutError:
            if not scope.expired():
                raise
            del self.messages[mark:]  # an unanswered tool call would make the history invalid
            return TurnOutcome("cancelled", error="cancelled")
        except asyncio.CancelledError:
            del self.messages[mark:]
            raise
        except ModelError as exc:
            del self.messages[mark:]
            raise HarnessStartError(f"model call failed: {exc}") from None
        finally:
            self._scope = None
        if result.status != "completed":
            return TurnOutcome("failed", error=result.error)
        emit(Event(MESSAGE_COMPLETED, {"role": "assistant", "text": result.message}))
        return TurnOutcome("completed", message=result.message, data=result.data)

    async def cancel(self) -> bool:
        scope = self._scope
        if scope is None or scope.expired():
            return False
        # Cancels the turn's task at whatever it awaits: the in-flight request is dropped.
        scope.reschedule(asyncio.get_running_loop().time())
        return True

    async def close(self) -> None:
        await self.cancel()  # the drive cancels a running turn first; this is a safety net


_prewarming: threading.Thread | None = None


def _prewarm() -> None:
    try:
        import aiohttp  # noqa: F401 - a third of a second, mostly loading CA certificates

        from ..models import ChatClient  # noqa: F401 - the package, imported ahead of the first trial
    except ImportError:
        pass  # reported by the first request, in the trial's reason


def resolve(spec: str, project_dir: Path | None = None) -> OpenAIHarness:
    """``"openai:gpt-4.1-mini"`` → a harness. The model may also come from the variant.

    Starts importing the HTTP client in a background thread: the import (which loads the CA
    certificates, with the GIL released) then overlaps the rest of the run's start-up."""
    global _prewarming
    if not spec.startswith("openai:"):
        raise HarnessSpecError(f"not an openai harness spec: {spec!r}")
    suffix = spec[len("openai:") :]
    if suffix != suffix.strip() or any(c.isspace() for c in suffix):
        raise HarnessSpecError(
            f"openai harness spec must be 'openai:<model>' without spaces, got {spec!r}"
        )
    if _prewarming is None:
        _prewarming = threading.Thread(target=_prewarm, name="anpord-prewarm", daemon=True)
        _prewarming.start()
    return OpenAIHarness(spec, project_dir)
