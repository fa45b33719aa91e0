"""An async client for OpenAI-compatible chat-completions endpoints, on aiohttp.

One ``ChatClient`` is one endpoint (base URL + key + limits). It keeps one aiohttp session per
event loop, made on first use: every trial of a run shares its keep-alive connections and its
connection limit. ``close()`` ends it; a client never closed is still closed when its event loop
shuts down (``asyncio.run`` finalises async generators), so a forgotten close leaks nothing.

aiohttp is imported on first request, never at import time: the CLI starts without it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ._cache import CacheScope, RequestCache
from ._errors import (
    MalformedResponseError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    ProviderError,
    RateLimitedError,
)
from ._pricing import Price, cost_of
from ._retry import RETRY_STATUSES, RetryPolicy, retry_after_seconds
from ._types import ChatResponse, parse_completion

if TYPE_CHECKING:
    import aiohttp

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MAX_CONNECTIONS", "DEFAULT_TIMEOUT", "ChatClient"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_CONNECTIONS = 100
CHAT_PATH = "/chat/completions"
_NETLOC = re.compile(r"https?://([^/?#]*)")


class _LoopState:
    """What a client holds per event loop: the HTTP session and the connection slots."""

    def __init__(self, session: aiohttp.ClientSession, slots: asyncio.Semaphore):
        self.session = session
        self.slots = slots
        self.closer: AsyncIterator[None] | None = None


async def _closing(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    # Suspended until close() or the loop's shutdown_asyncgens() finalises it: either way the
    # session is closed on its own loop.
    try:
        yield
    finally:
        await session.close()


def _request_json(body: Mapping[str, Any]) -> bytes:
    """A request's body as UTF-8 JSON: orjson's, a twentieth of json's time on every model call;
    json's own for what orjson refuses (keys that are not strings, such as ``logit_bias``'s
    token ids; integers past 64 bits), which also raises json's ``TypeError`` for a value
    neither can write. orjson writes a NaN as null, where json wrote a ``NaN`` no server reads,
    and writes dataclasses, dates and enums, which json refused."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _answer_json(data: bytes) -> Any:
    """An answer's JSON: orjson's, a quarter of json's time; json's own for what orjson refuses
    and json reads (``NaN``, UTF-16), whose ``ValueError`` says what is wrong otherwise."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _provider_message(body: bytes) -> str:
    """The error message a provider put in its body (OpenAI style ``{"error": {"message"}}``)."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return _one_line(text)
    if isinstance(data, Mapping):
        err = data.get("error", data)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return _one_line(err["message"])
        if isinstance(err, str):
            return _one_line(err)
    return _one_line(text)


class ChatClient:
    """An OpenAI-compatible chat-completions endpoint.

    The API key is read from ``api_key`` or the environment variable ``api_key_env`` (looked up in
    ``env`` first, then the process environment) and only ever sent in the Authorization header;
    with no key, requests go without one (local servers need none)."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        retry: RetryPolicy | None = None,
        cache: RequestCache | None = None,
        prices: Mapping[str, Price] | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"base_url must be an http(s) URL such as http://localhost:11434/v1, got {base_url!r}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if (
            isinstance(max_connections, bool)
            or not isinstance(max_connections, int)
            or max_connections < 1
        ):
            raise ValueError(f"max_connections must be a positive integer, got {max_connections!r}")
        self.base_url = base_url.rstrip("/")
        self.host = parts.netloc
        self.api_key_env = api_key_env
        key = (
            api_key
            if api_key is not None
            else (env or {}).get(api_key_env) or os.environ.get(api_key_env)
        )
        self.has_key = bool(key)
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self.timeout = float(timeout)
        self.max_connections = max_connections
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self.prices = dict(prices or {})
        self._borrowed = False
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )

    def via(self, base_url: str, api_key: str | None) -> ChatClient:
        """This client's settings and connection pool, its requests sent to ``base_url`` with
        ``api_key`` instead (a model proxy's per-trial address and stand-in key): a trial's
        client costs no session and no connection of its own. Closing it leaves the pool open;
        closing this client closes the pool."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)  # shares _loops: the same session and slots on each loop
        other.base_url = base_url.rstrip("/")
        found = _NETLOC.match(base_url)  # what urlsplit calls the netloc, at a fraction of its cost
        other.host = found.group(1) if found else urlsplit(base_url).netloc
        other._headers = {k: v for k, v in self._headers.items() if k != "Authorization"}
        if api_key:
            other._headers["Authorization"] = f"Bearer {api_key}"
        other.has_key = bool(api_key)
        other._borrowed = True
        return other

    def __repr__(self) -> str:  # never shows the key
        return f"ChatClient({self.base_url!r}, max_connections={self.max_connections})"

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the HTTP session ---------------------------------------------------------------------

    async def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is not None and not state.session.closed:
            return state
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=self.max_connections, limit_per_host=0, ttl_dns_cache=300
        )
        session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=None)
        )
        state = self._loops[loop] = _LoopState(session, asyncio.Semaphore(self.max_connections))
        state.closer = _closing(session)
        await state.closer.__anext__()
        return state

    async def close(self) -> None:
        """Close this event loop's session (its connections). The client can be used again after."""
        if self._borrowed:
            return  # the pool is the client's it came from (via)
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None and state.closer is not None:
            await state.closer.aclose()  # type: ignore[attr-defined]

    # -- requests -----------------------------------------------------------------------------

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        temperature: float | None = None,
        seed: int | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_scope: CacheScope | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> ChatResponse:
        """One chat completion. Parameters left None are not sent (the server's defaults apply).
        Raises a ``ModelError`` subclass when no valid answer could be had."""
        body: dict[str, Any] = {"model": model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        for key, value in (
            ("tool_choice", tool_choice),
            ("temperature", temperature),
            ("seed", seed),
            ("max_tokens", max_tokens),
            ("response_format", response_format),
        ):
            if value is not None:
                body[key] = value
        if extra_body:
            body.update(extra_body)
        return await self.complete(body, cache_scope=cache_scope, prices=prices)

    async def complete(
        self,
        body: Mapping[str, Any],
        *,
        cache_scope: CacheScope | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> ChatResponse:
        """POST a ready request body to ``/chat/completions``. ``prices`` adds to the client's."""
        key = None
        if self.cache is not None:
            key = (cache_scope or CacheScope(None)).key(CHAT_PATH, body)
            stored = self.cache.get(key)
            if stored is not None:
                try:
                    return self._priced(parse_completion(stored), body, prices, cached=True)
                except MalformedResponseError:
                    pass  # an entry that no longer parses is a miss
        raw = await self._post(CHAT_PATH, body)
        try:
            parsed = parse_completion(raw)
        except MalformedResponseError as exc:
            raise MalformedResponseError(f"{self._where(body)}: {exc}") from None
        response = self._priced(parsed, body, prices)
        if self.cache is not None and key is not None:
            self.cache.put(key, raw)
        return response

    def _priced(
        self,
        response: ChatResponse,
        body: Mapping[str, Any],
        prices: Mapping[str, Price] | None,
        cached: bool = False,
    ) -> ChatResponse:
        table = {**self.prices, **prices} if prices else self.prices
        requested = body.get("model")
        cost = cost_of(requested if isinstance(requested, str) else None, response.usage, table)
        if cost is None and response.model:
            cost = cost_of(response.model, response.usage, table)
        return replace(response, cost=cost, cached=cached)

    def _where(self, body: Mapping[str, Any]) -> str:
        return f"{body.get('model')} at {self.host}"

    async def _post(self, path: str, body: Mapping[str, Any]) -> Any:
        import aiohttp

        payload = _request_json(body)
        url = self.base_url + path
        policy = self.retry
        where = self._where(body)
        last: ModelError | None = None
        for attempt in range(1, policy.max_attempts + 1):
            state = await self._state()
            wait: float | None = None
            try:
                async with state.slots:
                    async with asyncio.timeout(self.timeout):
                        async with state.session.post(
                            url, data=payload, headers=self._headers
                        ) as resp:
                            status, headers, data = resp.status, resp.headers, await resp.read()
            except TimeoutError:
                last = ModelTimeoutError(
                    f"{where}: no answer within {self.timeout:g}s", attempts=attempt
                )
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                detail = _one_line(str(exc)) or type(exc).__name__
                last = ModelConnectionError(
                    f"{where}: connection failed: {detail}", attempts=attempt
                )
            else:
                if 200 <= status < 300:
                    try:
                        return _answer_json(data)
                    except ValueError:
                        raise MalformedResponseError(
                            f"{where}: the response is not JSON: {_one_line(data.decode('utf-8', 'replace'), 200)!r}",
                            attempts=attempt,
                        ) from None
                message = _provider_message(data)
                retry_after = retry_after_seconds(headers)
                if status == 429:
                    last = RateLimitedError(
                        f"{where}: rate limited (HTTP 429) after {attempt} attempt(s): {message}",
                        body=data.decode("utf-8", "replace"),
                        attempts=attempt,
                        retry_after=retry_after,
                    )
                    if retry_after is not None and retry_after > policy.max_retry_after:
                        last.args = (
                            f"{where}: rate limited (HTTP 429): the server asks to wait "
                            f"{retry_after:g}s, more than max_retry_after={policy.max_retry_after:g}s",
                        )
                        raise last
                else:
                    hint = ""
                    if status in (401, 403) and not self.has_key:
                        hint = f" (no API key was sent: {self.api_key_env} is not set)"
                    last = ProviderError(
                        f"{where}: HTTP {status}: {message}{hint}",
                        status=status,
                        body=data.decode("utf-8", "replace"),
                        attempts=attempt,
                    )
                    if status not in RETRY_STATUSES:
                        raise last
                wait = retry_after
            if attempt < policy.max_attempts:
                await asyncio.sleep(wait if wait is not None else policy.backoff(attempt))
        assert last is not None
        if (
            isinstance(last, ProviderError)
            and not isinstance(last, RateLimitedError)
            or isinstance(last, (ModelTimeoutError, ModelConnectionError))
        ):
            last.args = (f"{last.args[0]} (after {policy.max_attempts} attempts)",)
        raise last
