"""The model clients of one run: one per endpoint, shared by every trial, closed at the end.

A harness (or an agent) owns a ``ModelClients``; trials ask it for the client of their endpoint,
so all trials against one server share its keep-alive connections and its connection limit."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ._cache import RequestCache
from ._client import DEFAULT_MAX_CONNECTIONS, DEFAULT_TIMEOUT, ChatClient
from ._retry import RetryPolicy

__all__ = ["ModelClients"]


class ModelClients:
    def __init__(self) -> None:
        self._clients: dict[tuple[object, ...], ChatClient] = {}
        self._caches: dict[str, RequestCache] = {}

    def get(
        self,
        base_url: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        retry: RetryPolicy | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> ChatClient:
        """The client for these settings, made on first use. Raises ValueError for a bad setting."""
        retry = retry or RetryPolicy()
        # The key's value (not only its variable's name) tells endpoints apart: two variants
        # reading different keys for one server are two accounts with two rate limits.
        key_value = (env or {}).get(api_key_env) or os.environ.get(api_key_env)
        cache_key = str(Path(cache_dir).resolve()) if cache_dir is not None else None
        ident = (
            base_url.rstrip("/"),
            api_key_env,
            hash(key_value),
            timeout,
            max_connections,
            retry,
            cache_key,
        )
        client = self._clients.get(ident)
        if client is None:
            cache = None
            if cache_key is not None:
                cache = self._caches.get(cache_key) or self._caches.setdefault(
                    cache_key, RequestCache(cache_key)
                )
            client = ChatClient(
                base_url,
                api_key_env=api_key_env,
                env=env,
                timeout=timeout,
                max_connections=max_connections,
                retry=retry,
                cache=cache,
            )
            self._clients[ident] = client
        return client

    @property
    def clients(self) -> list[ChatClient]:
        return list(self._clients.values())

    async def close(self) -> None:
        """Close every client's connections (on the running loop)."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
